package service

import (
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// persist keeps .pilot/sandbox.json in step with settled states; the
// transitional ones (starting, stopping) are not written. A file that
// cannot be written is reported, and the sandbox goes on as it is: the
// sidecar finds containers by name, not by this file.
func (m *Manager) persist(b *box, prev, st *State) {
	if !m.mayWrite(b) {
		return // another process is working on the project and writes
	}
	if st == nil {
		m.warn(b, projectfs.SandboxFile(b.project), projectfs.RemoveRecord(b.project))
		if err := m.registry.Remove(b.project); err != nil {
			m.log.Warn().Err(err).Msg("could not update the project registry")
		}
		return
	}
	if !settled(st) {
		return // transitional, or a start that failed before there was a container
	}
	if prev != nil && projectfs.SameRecord(recordOf(*prev, time.Time{}), recordOf(*st, time.Time{})) {
		return
	}
	m.saveRecord(b, *st)
}

// saveRecord writes the state to .pilot/sandbox.json, reporting what was
// wrong with the file there, if anything.
func (m *Manager) saveRecord(b *box, st State) {
	if projectfs.Gone(b.project) {
		return // an orphan (see Orphans): its project stays deleted
	}
	now := m.cfg.Now()
	aside, err := projectfs.WriteRecord(b.project, recordOf(st, now), now)
	if aside != nil {
		m.warn(b, projectfs.SandboxFile(b.project), aside)
	}
	m.warn(b, projectfs.SandboxFile(b.project), err)
	if err := m.registry.Add(b.project); err != nil {
		m.log.Warn().Err(err).Msg("could not update the project registry")
	}
}

// recordOf is what .pilot/sandbox.json says of a state.
func recordOf(st State, now time.Time) projectfs.Record {
	return projectfs.Record{
		ContainerID:   st.ContainerID,
		ContainerName: st.ContainerName,
		Image:         st.Image,
		WSPort:        st.WSPort,
		VNCPort:       st.VNCPort,
		Status:        string(st.Status),
		Display:       projectfs.Display(st.Display),
		StopReason:    st.StopReason,
		CreatedAt:     st.CreatedAt,
		UpdatedAt:     now.UnixMilli(),
	}
}

// ensureRecord rewrites .pilot/sandbox.json when it does not say what the
// settled state says: lost, corrupt, or edited by hand since.
func (m *Manager) ensureRecord(b *box) {
	if !m.mayWrite(b) {
		return
	}
	st := b.snapshot()
	if !settled(st) {
		return
	}
	if rec, err := projectfs.ReadRecord(b.project); err == nil && rec != nil && projectfs.SameRecord(*rec, recordOf(*st, time.Time{})) {
		return
	}
	m.saveRecord(b, *st)
}
