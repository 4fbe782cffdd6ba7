package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/legate-dev/legate/statuspage"
)

const (
	day  = 24 * time.Hour
	year = 365 * day
)

// humanDuration prints d the way a person reads it ("10y", "90d", "5h3m").
func humanDuration(d time.Duration) string { return statuspage.HumanDuration(d) }

// durationValue is a duration flag that also takes days and years
// ("90d", "10y", "1y30d") and prints its default in those units.
type durationValue time.Duration

func (d *durationValue) String() string { return humanDuration(time.Duration(*d)) }
func (d *durationValue) Type() string   { return "duration" }

func (d *durationValue) Set(s string) error {
	v, err := parseHumanDuration(s)
	if err != nil {
		return err
	}
	*d = durationValue(v)
	return nil
}

// parseHumanDuration parses Go durations with "d" (24h) and "y" (365d)
// units added in front: "10y", "1y30d", "90d12h", "720h".
func parseHumanDuration(s string) (time.Duration, error) {
	var total time.Duration
	rest := strings.TrimSpace(s)
	for _, u := range []struct {
		suffix string
		size   time.Duration
	}{{"y", year}, {"d", day}} {
		i := strings.Index(rest, u.suffix)
		if i <= 0 {
			continue
		}
		n, err := strconv.Atoi(rest[:i])
		if err != nil {
			return 0, fmt.Errorf("duration %q: want e.g. 10y, 90d, 12h or 1y30d", s)
		}
		total += time.Duration(n) * u.size
		rest = rest[i+1:]
	}
	if rest != "" {
		d, err := time.ParseDuration(rest)
		if err != nil {
			return 0, fmt.Errorf("duration %q: want e.g. 10y, 90d, 12h or 1y30d", s)
		}
		total += d
	}
	if total <= 0 {
		return 0, fmt.Errorf("duration %q must be positive", s)
	}
	return total, nil
}
