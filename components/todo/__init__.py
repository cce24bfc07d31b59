"""The todo list: a preview of a stack as the operator's ordered list of pending work, and the
same list followed live during `up`.

plan.py    engine data (step events, the saved plan file) → ordered todo items
describe.py  one resource → its sentence, phase and priority
views.py   items → text, Markdown, JSON (the seeds' shape), Mermaid, Graphviz dot
live.py    engine events of an `up` → status transitions and progress lines
engine.py  the Automation API: preview with a saved plan, up, events as plain dicts
__main__.py  the command: python -m components.todo --stack STACK [--format …] [--up]
"""
