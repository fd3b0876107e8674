from harness_g.cli import main

raise SystemExit(main())
