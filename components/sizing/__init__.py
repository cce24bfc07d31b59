"""Will a model fit its layout's memory: pure arithmetic, no node and no Pulumi. ``model_facts``
reads a model's shape and sizes, ``fit`` weighs weights + KV cache + overhead against each GPU,
``stack_fit`` runs it on a whole stack config (``model_source`` finds each model's config), and
``ledger`` sets the prediction beside what each engine reports it allocated."""
