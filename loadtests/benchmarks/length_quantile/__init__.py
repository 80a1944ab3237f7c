"""The output-length quantile sweep of the replay: which quantile the router plans with."""
