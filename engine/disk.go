package engine

import (
	"context"
	"strconv"
	"strings"

	docker "github.com/fsouza/go-dockerclient"
)

// DiskUsage is the size of the container's writable layer (SizeRw), which
// the engine computes by walking the layer when asked (inspect with
// size=true): about 10 ms for a fresh sandbox, more with many files.
func (e *Client) DiskUsage(ctx context.Context, id string) (int64, error) {
	api, err := e.connect(ctx)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	c, err := api.InspectContainerWithOptions(docker.InspectContainerOptions{ID: id, Size: true, Context: ctx})
	if err != nil {
		return 0, e.classify(err)
	}
	return c.SizeRw, nil
}

// DiskLimitSupport says whether the engine's storage driver may bound a
// container's writable layer (--storage-opt size), and why. overlay2 does
// only on xfs mounted with pquota, which the engine does not report: on
// xfs it is tried, and a refusal makes the client fall back for good.
func (e *Client) DiskLimitSupport(ctx context.Context) (bool, string) {
	e.mu.Lock()
	known, why := e.diskLimit, e.diskLimitWhy
	e.mu.Unlock()
	if known != diskLimitUnknown {
		return known == diskLimitYes, why
	}
	api, err := e.connectShort(ctx)
	if err != nil {
		return false, "the engine did not answer"
	}
	info, err := api.Info()
	if err != nil {
		return false, "the engine did not answer"
	}
	ok, why := driverBoundsSize(info.Driver, backingFS(info.DriverStatus))
	e.setDiskLimit(ok, why)
	return ok, why
}

// diskLimitState is what the client knows of the engine's size limits.
type diskLimitState int

const (
	diskLimitUnknown diskLimitState = iota
	diskLimitYes
	diskLimitNo
)

func (e *Client) setDiskLimit(ok bool, why string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.diskLimit, e.diskLimitWhy = diskLimitNo, why
	if ok {
		e.diskLimit = diskLimitYes
	}
}

// driverBoundsSize is the storage drivers Docker documents --storage-opt
// size for.
func driverBoundsSize(driver, backing string) (bool, string) {
	switch driver {
	case "overlay2":
		if backing == "xfs" {
			return true, "overlay2 on xfs bounds it, if mounted with pquota"
		}
		return false, "the storage driver overlay2 bounds it only on xfs with pquota, and this engine's is on " + orUnknown(backing)
	case "btrfs", "zfs", "devicemapper", "windowsfilter":
		return true, "the storage driver " + driver + " bounds it"
	}
	return false, "the storage driver " + orUnknown(driver) + " cannot bound it"
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// backingFS reads the "Backing Filesystem" of the driver's status.
func backingFS(status [][2]string) string {
	for _, kv := range status {
		if kv[0] == "Backing Filesystem" {
			return kv[1]
		}
	}
	return ""
}

// storageOpt is the --storage-opt of a new container: its size bound when
// the engine may take one.
func (e *Client) storageOpt(ctx context.Context, diskBytes int64) map[string]string {
	if diskBytes <= 0 {
		return nil
	}
	if ok, _ := e.DiskLimitSupport(ctx); !ok {
		return nil
	}
	return map[string]string{"size": strconv.FormatInt(diskBytes, 10)}
}

// sizeRefused says whether a create failed on the size bound ("--storage-opt
// is supported only for overlay over xfs with 'pquota' mount option", or a
// quota the file system does not keep); only the text tells.
func sizeRefused(err error) bool {
	apiErr, ok := err.(*docker.Error)
	if !ok {
		return false
	}
	msg := strings.ToLower(apiErr.Message)
	return strings.Contains(msg, "storage-opt") || strings.Contains(msg, "storage opt") || strings.Contains(msg, "quota")
}
