import sys

from memgate import main

sys.exit(main())
