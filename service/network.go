package service

import (
	"errors"
	"strings"

	"github.com/pilot-sandbox/pilot-sandbox/netpolicy"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// The network policy (package netpolicy) is judged outside service; what
// service holds of it is what it holds of every policy: the user's
// config.json, the project's settings, and the approval of what the
// repository asks beyond the user's own policy (kind "network", as a
// Dockerfile and limits above the caps are approved). A start fails,
// making nothing, while config.json's network cannot be used (a slip there
// must not open what the user meant to close) or while the repository's
// widening waits for approval.

// ApprovalNetwork is the kind of approval a repository's wider network
// policy needs.
const ApprovalNetwork = "network"

// UserNetwork is the user's network policy, or, while a key of
// config.json's network is wrong, a *projectfs.ConfigError naming it.
func (m *Manager) UserNetwork() (netpolicy.Config, error) {
	cfg, err := m.currentPolicy()
	var ue *projectfs.UserConfigError
	if !errors.As(err, &ue) {
		return cfg.Network, nil
	}
	var keys, reasons []string
	for _, p := range ue.Problems {
		if projectfs.NetworkKey(p.Key) {
			keys, reasons = append(keys, p.Key), append(reasons, p.Key+" "+p.Reason)
		}
	}
	if keys == nil {
		return cfg.Network, nil
	}
	return netpolicy.Config{}, &projectfs.ConfigError{File: ue.File, Field: keys[0], Reason: strings.TrimPrefix(strings.Join(reasons, "; "), keys[0]+" ")}
}

// RepositoryNetwork is the project's own network policy (sandbox.network)
// and whether the user approved exactly what it asks beyond the user's
// policy. A settings file that is refused counts as naming none.
func (m *Manager) RepositoryNetwork(path string) (netpolicy.Repository, bool, error) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return netpolicy.Repository{}, false, err
	}
	pc, err := projectfs.ReadConfig(project)
	if errors.Is(err, projectfs.ErrRefused) {
		return netpolicy.Repository{}, false, nil
	}
	if err != nil {
		return netpolicy.Repository{}, false, err
	}
	user, err := m.UserNetwork()
	if err != nil {
		return netpolicy.Repository{}, false, err
	}
	repo := pc.NetworkPolicy()
	w := repo.Widens(user)
	return repo, w.Empty() || m.approvals.Approved(project, ApprovalNetwork, w.Digest()), nil
}

// checkNetwork refuses a start of a sandbox with a network while the
// user's network policy cannot be used, or while what the repository asks
// beyond it is not approved.
func (m *Manager) checkNetwork(project string, pc projectfs.Config) error {
	user, err := m.UserNetwork()
	if user.None || pc.NetworkNone() {
		return nil
	}
	if err != nil {
		return err
	}
	if a, ok := networkAsk(pc, user); ok {
		return m.require(project, a)
	}
	return nil
}

// networkAsk is the approval the repository's network policy needs, if
// it asks anything beyond the user's.
func networkAsk(pc projectfs.Config, user netpolicy.Config) (Approval, bool) {
	w := pc.NetworkPolicy().Widens(user)
	if w.Empty() {
		return Approval{}, false
	}
	return Approval{Kind: ApprovalNetwork, Summary: w.Summary(), Digest: w.Digest(), Content: w.Content()}, true
}
