"""Where a stack's state lives and who may change it: the local file backend (the default) or a
team's PostgreSQL through Pulumi's own DIY `postgres://` backend (docs/team-backend.md).
url: which backend, its credentials kept out of the repository and out of every message;
guard: one run at a time per stack, held in PostgreSQL for the run's life;
locks: Pulumi's own lock rows in that backend, and which of them a dead run left."""
