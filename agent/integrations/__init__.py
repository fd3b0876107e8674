"""The menu environment in other trainers' hands (optional dependencies: ``openenv-core``, ``trl``).

- :mod:`.menu_service`     the shared core, no third-party library: episodes over one :class:`GraphView`
                           (:class:`~.menu_service.MenuService`), actions by menu id or by kind + argument, the
                           answer phase, the outcome reward and the step metadata (committed evidence, the step's
                           preview, optional SNC credit through a :class:`~.menu_service.StepCredit` hook).
- :mod:`.openenv_server`   an OpenEnv environment (``openenv.core`` ``Environment``/``Action``/``Observation``), the
                           app built with OpenEnv's own ``create_app`` and its client; ``harness-g serve-env``.
- :mod:`.trl_env`          a TRL ``GRPOTrainer(environment_factory=...)`` class with the tools select / lookup /
                           answer_with / answer, in-process or through the server's client.

Nothing here imports ``harness_g.training``: the SNC credit of a step needs training's frozen answerer, so it is a
hook the caller passes in (:class:`harness_g.training.env_credit.AnswererCredit`; ``serve-env --answerer`` loads it
by name, the one lazy upward reference DESIGN.md allows).
"""
