package engine

import "errors"

// sshDir: Windows' OpenSSH has no ControlMaster, on which the ssh route
// depends (sshdial.go).
func sshDir() (string, error) {
	return "", errors.New("ssh:// engines need OpenSSH's ControlMaster, which Windows' OpenSSH does not have: run pilot-sandbox in WSL")
}
