"""Discovery: a stack file written from the machines themselves (`python -m components.discover`).

hostkeys (trust by fingerprint) → probe (one read-only script over SSH) → facts (its output,
parsed) → fabric (which netdev, per machine) and engines (what already serves) → nodes (the
stack's values with comments) → write (YAML text) / merge (into an existing file, with a diff).
"""
