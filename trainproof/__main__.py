from trainproof.cli import main

raise SystemExit(main())
