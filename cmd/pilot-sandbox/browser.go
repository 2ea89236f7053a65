package main

import (
	"context"
	"fmt"
	"html"
	"os"
	"os/exec"
	"runtime"

	"github.com/rs/zerolog"
)

// browserOpener is the command that opens a file or URL in the user's
// browser, by operating system.
func browserOpener() []string {
	switch runtime.GOOS {
	case "darwin":
		return []string{"open"}
	case "windows":
		return []string{"rundll32", "url.dll,FileProtocolHandler"}
	default:
		return []string{"xdg-open"}
	}
}

// openPanel opens the panel's address in the user's browser, and says so on
// stderr when it cannot. The browser is given a private file that redirects
// to the address rather than the address itself: a command line is visible
// to every user of the machine for as long as the browser runs, and the
// token in the address is what keeps them out. The file is removed when ctx
// ends.
func openPanel(ctx context.Context, log zerolog.Logger, address string) {
	opener := browserOpener()
	fail := func(err error) {
		log.Warn().Err(err).Msg("could not open a browser: open the address printed above yourself")
	}
	path, err := exec.LookPath(opener[0])
	if err != nil {
		fail(err)
		return
	}
	redirect, err := writeRedirect(address)
	if err != nil {
		fail(err)
		return
	}
	defer os.Remove(redirect)
	cmd := exec.Command(path, append(opener[1:], redirect)...)
	if err := cmd.Start(); err != nil {
		fail(err)
		return
	}
	// Some openers return at once, some only when the browser exits: the
	// panel does not wait for the latter. The goroutine ends with the opener.
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			fail(fmt.Errorf("%s: %w", opener[0], err))
			return
		}
		<-ctx.Done()
	case <-ctx.Done():
	}
}

// writeRedirect writes an HTML file, readable by its owner only, that
// sends the browser to address.
func writeRedirect(address string) (string, error) {
	f, err := os.CreateTemp("", "pilot-sandbox-ui-*.html")
	if err != nil {
		return "", err
	}
	a := html.EscapeString(address)
	_, err = fmt.Fprintf(f, "<!DOCTYPE html><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"0;url=%s\">"+
		"<title>Sandbox</title><p><a href=\"%s\">Open the sandbox panel</a></p>\n", a, a)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}
