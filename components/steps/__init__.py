"""How a rendered script becomes a step on a node: the pulumi-command wrapper (remote), the
program's own SSH look (ssh), the templates (render), what a step is (info), the type tokens,
secrets, the failure block and the rollback of a failed `up`."""
