"""The todo list: a preview of a stack as the operator's ordered list of pending work, and the
same list followed live during `up`.

plan.py    engine data (step events, the saved plan file) → ordered todo items
describe.py  one step → the sentence, phase and priority its component declared (components/steps/info.py)
views.py   items → text, Markdown, JSON (the seeds' shape), Mermaid, Graphviz dot
live.py    engine events of an `up` → status transitions and progress lines
engine.py  the Automation API: preview with a saved plan, up, events as plain dicts
interrupted.py  what a killed run left: a stale backend lock (cleared when its process is gone), pending steps
__main__.py  the command: python -m components.todo --stack STACK [--format …] [--up]
"""
