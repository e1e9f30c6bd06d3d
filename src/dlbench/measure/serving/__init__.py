"""What a served request measured and what its figures mean: the raw record of each
request (:mod:`.records`), dlbench's one definition of each serving figure
(:mod:`.definitions`), and the same run in the definitions of other tools
(:mod:`.peers`). Shared by the in-process ``generate`` phase and the ``endpoint``
framework, so that both mean the same thing by the same key."""
