package images

import (
	"testing"
	"time"
)

func TestJudge(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	week := 7 * 24 * time.Hour
	built := func(ago time.Duration) map[string]string {
		return map[string]string{LabelHash: "h1", LabelBuilt: now.Add(-ago).Format(time.RFC3339)}
	}
	for _, tc := range []struct {
		name         string
		labels       map[string]string
		found        bool
		rebuildAfter time.Duration
		want         verdict
	}{
		{"missing", nil, false, week, verdict{reason: "is missing"}},
		{"another hash", map[string]string{LabelHash: "h0"}, true, week, verdict{reason: "is out of date"}},
		{"another hash, old too", map[string]string{LabelHash: "h0", LabelBuilt: "2020-01-01T00:00:00Z"}, true, week, verdict{reason: "is out of date"}},
		{"new", built(time.Hour), true, week, verdict{}},
		{"just under the age", built(week - time.Second), true, week, verdict{}},
		{"at the age", built(week), true, week, verdict{reason: "is 7 days old: rebuilding for security updates", forAge: true}},
		{"9 days", built(9*24*time.Hour + 3*time.Hour), true, week, verdict{reason: "is 9 days old: rebuilding for security updates", forAge: true}},
		{"a shorter policy", built(30 * time.Hour), true, 24 * time.Hour, verdict{reason: "is 1 day old: rebuilding for security updates", forAge: true}},
		{"in hours", built(5 * time.Hour), true, 2 * time.Hour, verdict{reason: "is 5 hours old: rebuilding for security updates", forAge: true}},
		{"never for age", built(400 * 24 * time.Hour), true, 0, verdict{}},
		{"no built label: age unknown", map[string]string{LabelHash: "h1"}, true, week, verdict{}},
		{"unreadable built label", map[string]string{LabelHash: "h1", LabelBuilt: "last week"}, true, week, verdict{}},
		{"built in the future (clock set back)", built(-48 * time.Hour), true, week, verdict{}},
	} {
		if got := judge(tc.labels, tc.found, "h1", now, tc.rebuildAfter); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestFormatAge(t *testing.T) {
	for age, want := range map[time.Duration]string{
		0: "less than an hour", 59 * time.Minute: "less than an hour", time.Hour: "1 hour", 90 * time.Minute: "1 hour",
		23 * time.Hour: "23 hours", 24 * time.Hour: "1 day", 47 * time.Hour: "1 day", 48 * time.Hour: "2 days", 9*24*time.Hour + time.Hour: "9 days",
	} {
		if got := FormatAge(age); got != want {
			t.Errorf("FormatAge(%v) = %q, want %q", age, got, want)
		}
	}
}
