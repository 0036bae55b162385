"""What the tests share and are not tests themselves: helpers, oracles, fixed tables and the fast settings.

Imported as ``support.<module>`` (tests/ is on the path through its conftest.py); a helper that tests of two folders
use belongs here, never in a test module that another one imports."""
