"""The locust side: users, scenarios, sessions and load shapes a run offers (locust -f loadtests/load/locustfile.py).
Imports scoring and the fleet's world and workload (gateway.fleet); no benchmark, no replay."""
