package images

import (
	"fmt"
	"time"
)

// Age is how long ago an image with these labels was built; ok is false
// for an image without a readable LabelBuilt (one built before the label
// existed), whose age is unknown.
func Age(labels map[string]string, now time.Time) (age time.Duration, ok bool) {
	built, err := time.Parse(time.RFC3339, labels[LabelBuilt])
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

// verdict is whether an image must be built, and why.
type verdict struct {
	// reason completes "the image ...", "" when the image will do.
	reason string
	// forAge: the image is current but old; it is rebuilt without the
	// build's cache (or its packages would come from the cache), and a
	// failed rebuild leaves the old image in use.
	forAge bool
}

// judge decides on an image from its labels (found false: there is none),
// the build hash it must have, the time, and rebuildAfter (0: never for
// its age).
func judge(labels map[string]string, found bool, hash string, now time.Time, rebuildAfter time.Duration) verdict {
	switch {
	case !found:
		return verdict{reason: "is missing"}
	case labels[LabelHash] != hash:
		return verdict{reason: "is out of date"}
	}
	age, ok := Age(labels, now)
	if !ok || rebuildAfter <= 0 || age < rebuildAfter {
		return verdict{}
	}
	return verdict{reason: fmt.Sprintf("is %s old: rebuilding for security updates", FormatAge(age)), forAge: true}
}
