package tools

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
)

// Whether the screen changed after an action, told in its result. The
// desktop agent watches the X server's DAMAGE events (no sleep, no
// polling) and compares what was redrawn with the screen before it, so a
// caret's blink is no change (resources/agent/xscreen.py).
const (
	// settleWait is how long after an action a first change is waited
	// for: a click's or a key's own effect is drawn within tens of
	// milliseconds; a program that takes longer to answer is not waited
	// for (the model's next screenshot sees it).
	settleWait = 500 * time.Millisecond
	// settleQuiet is how long the screen must be still after a change for
	// the action's effect to count as drawn.
	settleQuiet = 150 * time.Millisecond
	// settleLongest bounds the whole wait: an animation never settles.
	settleLongest = 2 * time.Second
	// stableQuiet is how long the screen must be still for sandbox_wait
	// {until: "stable"}: longer than an action's, to span the frames of a
	// page that is still loading.
	stableQuiet = 300 * time.Millisecond
)

// changeNote says what the screen did after an action.
func changeNote(c desktop.Change, s scale) string {
	if !c.Changed {
		return fmt.Sprintf("The screen did not change within %s s.", seconds(settleWait))
	}
	where := boxText(s.rectToShot(c.Box))
	if !c.Still {
		return fmt.Sprintf("The screen changed %s and was still changing %s s after the action (an animation, or a "+
			"page still loading: sandbox_wait with until \"stable\" waits for it).", where, seconds(settleLongest))
	}
	return fmt.Sprintf("The screen changed %s and settled %d ms after the action.", where, c.Settled.Milliseconds())
}

func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }

// settled waits for the screen to settle after an action and says what it
// did; marked is Mark's error before the action, if it failed.
func settled(ctx context.Context, d Desktop, s scale, marked error) string {
	if marked != nil {
		return "Whether the screen changed could not be told (" + marked.Error() + ")."
	}
	c, err := d.Settle(ctx, settleWait, settleQuiet, settleLongest)
	if err != nil {
		return "Whether the screen changed could not be told (" + err.Error() + ")."
	}
	return changeNote(c, s)
}

// waitStable waits until the screen has been still for stableQuiet, at
// most timeout, and says how it went.
func waitStable(ctx context.Context, sb Sandbox, project string, timeout time.Duration) (Result, error) {
	d, err := sb.Desktop(ctx, project)
	if err != nil {
		return Result{}, err
	}
	st, err := d.Still(ctx, stableQuiet, timeout)
	if err != nil {
		return Result{}, err
	}
	switch {
	case !st.Still:
		return Text(fmt.Sprintf("The screen was still changing after %s s: something keeps moving (an animation, a "+
			"video, a progress bar). Take a screenshot to see it.", seconds(timeout))), nil
	case !st.Changed:
		return Text(fmt.Sprintf("The screen was already still: nothing changed for %s s.", seconds(stableQuiet))), nil
	}
	return Text(fmt.Sprintf("The screen was still (%s s without a change) %d ms after the call.",
		seconds(stableQuiet), st.Took.Milliseconds())), nil
}
