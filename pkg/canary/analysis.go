package canary

import (
	"fmt"
	"strconv"
)

// analyse is why the canary fails its analysis, or "" if it passes. Bounds are inclusive: a canary at a bound passes.
// Readiness counts only once the step's pause is over (pods may still be starting before), and then every canary
// pod must be ready; no canary pod at all fails too.
func analyse(a Analysis, o Observation, pauseOver bool) string {
	if a.MaxErrorRatePercent != NoLimit && o.Errors*100 > a.MaxErrorRatePercent*o.Requests {
		requests := max(o.Requests, o.Errors) // errors without requests count as 100%
		rate := strconv.FormatFloat(float64(o.Errors)*100/float64(requests), 'f', 1, 64)
		return fmt.Sprintf("error rate %s%% (%d of %d requests) is over the maximum %d%%",
			rate, o.Errors, o.Requests, a.MaxErrorRatePercent)
	}
	if a.MaxBreakerTrips != NoLimit && o.BreakerTrips > a.MaxBreakerTrips {
		return fmt.Sprintf("breaker trips: %d, over the maximum %d", o.BreakerTrips, a.MaxBreakerTrips)
	}
	if a.MaxRestarts != NoLimit && o.Restarts > a.MaxRestarts {
		return fmt.Sprintf("pod restarts: %d, over the maximum %d", o.Restarts, a.MaxRestarts)
	}
	if pauseOver && (o.Total == 0 || o.Ready < o.Total) {
		return fmt.Sprintf("ready canary pods: %d of %d after the pause", o.Ready, o.Total)
	}
	return ""
}

// unmeasured is why the analysis cannot pass the step yet, or "": with an error-rate or breaker-trip bound, a canary
// pod whose proxy metrics were not read would pass on counts that are unknown, not zero.
func unmeasured(a Analysis, o Observation) string {
	if o.Unmeasured == 0 || a.MaxErrorRatePercent == NoLimit && a.MaxBreakerTrips == NoLimit {
		return ""
	}
	return fmt.Sprintf("the proxy metrics of %d of %d canary pods could not be read (see the manager's log), so the error-rate and breaker-trip bounds cannot be checked",
		o.Unmeasured, o.Total)
}
