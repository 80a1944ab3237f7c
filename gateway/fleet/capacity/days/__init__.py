"""A day of traffic (``duet plan-day``): the day-shaped trace and its periods (``day``), the peak's
fixed fleet and the autoscaled one replayed through it (``daily``), the capacity curve's goals and
the schedule floor learned from tuning days (``day_goals``, ``day_floor``), what the gauge read
and where a day's money and misses went (``day_readings``, ``day_diagnosis``), and the docs'
tables (``day_render``, ``day_curve_render``)."""
