"""The locust side: users, scenarios, sessions and load shapes a run offers (locust -f loadtests/load/locustfile.py).
Imports scoring and world; no benchmark, no replay."""
