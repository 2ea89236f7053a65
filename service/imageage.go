package service

import (
	"fmt"
	"time"
)

// LabelImageBuilt is the time the sidecar built an image (RFC 3339, UTC),
// by its own clock. The engine's Created is not used: an image the classic
// builder makes wholly from its cache keeps the Created of the build that
// filled the cache, so a rebuild would not always make it younger; and a
// label of the sidecar's own can be set from a test's clock.
const LabelImageBuilt = "pilot.sandbox.built"

// ImageAge is how long ago an image with these labels was built; ok is
// false for an image without a readable LabelImageBuilt (one built before
// the label existed), whose age is unknown.
func ImageAge(labels map[string]string, now time.Time) (age time.Duration, ok bool) {
	built, err := time.Parse(time.RFC3339, labels[LabelImageBuilt])
	if err != nil {
		return 0, false
	}
	if age = now.Sub(built); age < 0 {
		age = 0 // a clock set back since: as good as new
	}
	return age, true
}

// FormatAge writes an age the way a person reads it: "9 days", "1 day",
// "5 hours", "less than an hour".
func FormatAge(age time.Duration) string {
	switch days, hours := int(age/(24*time.Hour)), int(age/time.Hour); {
	case days > 1:
		return fmt.Sprintf("%d days", days)
	case days == 1:
		return "1 day"
	case hours > 1:
		return fmt.Sprintf("%d hours", hours)
	case hours == 1:
		return "1 hour"
	default:
		return "less than an hour"
	}
}

// imageVerdict is whether an image must be built, and why.
type imageVerdict struct {
	// reason completes "the image ...", "" when the image will do.
	reason string
	// forAge: the image is current but old; it is rebuilt without the
	// build's cache (or its packages would come from the cache), and a
	// failed rebuild leaves the old image in use.
	forAge bool
}

// judgeImage decides on an image from its labels (found false: there is
// none), the build hash it must have, the time, and the policy's
// rebuildAfter (0: never for its age).
func judgeImage(labels map[string]string, found bool, hash string, now time.Time, rebuildAfter time.Duration) imageVerdict {
	switch {
	case !found:
		return imageVerdict{reason: "is missing"}
	case labels[LabelImageHash] != hash:
		return imageVerdict{reason: "is out of date"}
	}
	age, ok := ImageAge(labels, now)
	if !ok || rebuildAfter <= 0 || age < rebuildAfter {
		return imageVerdict{}
	}
	return imageVerdict{reason: fmt.Sprintf("is %s old: rebuilding for security updates", FormatAge(age)), forAge: true}
}
