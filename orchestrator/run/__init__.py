"""Writing a run: the engine and its parts (DESIGN.md "Data flow of one run").

- :mod:`.engine` — rounds, budgets, dispatch, commits, signals, stopping, resume (one engine)
- :mod:`.planners` — what to ask next, one module per campaign kind (PoE pairs, reference, absolute)
- :mod:`.groups` — which responses share a posterior (scopes) and the observations they get
- :mod:`.budget` — worst-case reservations and what fits
- :mod:`.requests` — the planning context every planner shares; request rows
"""
