package config

import (
	"fmt"
	"time"
)

const (
	// DefaultDrainDelay is COUNTERSIGN_DRAIN_DELAY's default with a
	// configuration file: longer than a health check's interval and two
	// failures (Caddy's 1s in deploy/caddy), and about what Kubernetes takes
	// to take a terminating pod out of its endpoints.
	DefaultDrainDelay = 5 * time.Second
	// maxDrainDelay bounds it: the drain only delays a restart.
	maxDrainDelay = time.Minute
)

// DrainDelay is how long serve keeps serving, with /readyz failing, between
// the shutdown signal and closing its listener: COUNTERSIGN_DRAIN_DELAY, else
// 5s with a configuration file and none for the local run, which has no
// load balancer in front and should stop at once.
func (c *Config) DrainDelay() time.Duration {
	if c.DrainDelaySetting == "" {
		if c.Local() {
			return 0
		}
		return DefaultDrainDelay
	}
	d, err := parseDrainDelay(c.DrainDelaySetting)
	if err != nil {
		return DefaultDrainDelay // Validate refuses it before serve runs
	}
	return d
}

// parseDrainDelay reads COUNTERSIGN_DRAIN_DELAY: a Go duration ("5s",
// "1500ms") or 0.
func parseDrainDelay(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	return time.ParseDuration(s)
}

// validateDrainDelay is Validate's part for COUNTERSIGN_DRAIN_DELAY.
func (c *Config) validateDrainDelay() []error {
	if c.DrainDelaySetting == "" {
		return nil
	}
	d, err := parseDrainDelay(c.DrainDelaySetting)
	if err != nil || d < 0 || d > maxDrainDelay {
		return []error{fmt.Errorf("COUNTERSIGN_DRAIN_DELAY is %q: give a duration from 0 to %s (such as 5s), or leave it unset (%s with a configuration file, 0 without)",
			c.DrainDelaySetting, maxDrainDelay, DefaultDrainDelay)}
	}
	return nil
}
