package sandboxfs_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/sandboxfs"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// BenchmarkCopy measures uploads and downloads of one 100 MB file and of
// a tree of 3000 small files (about 6 MB) against docker cp of the same
// data into and out of the same sandbox. The two alternate in every
// iteration, so that both see the same load on a shared machine; the
// metrics are each one's throughput over the data's bytes, and the ratio
// of their times (pilot/dockercp: below 1 is faster than docker cp).
//
//	go test -run '^$' -bench BenchmarkCopy -benchtime 5x ./sandboxfs
func BenchmarkCopy(b *testing.B) {
	m, docker := dockertest.Manager(b, nil)
	project := dockertest.Project(b, docker)
	ctx := context.Background()
	st, err := m.Start(ctx, project)
	if err != nil {
		b.Fatal(err)
	}
	files, err := m.Files(ctx, project)
	if err != nil {
		b.Fatal(err)
	}
	large := filepath.Join(b.TempDir(), "large")
	os.Mkdir(large, 0o755)
	writeBig(b, filepath.Join(large, "big.bin"), 100<<20, nil)
	small := filepath.Join(b.TempDir(), "small")
	makeTree(b, small, 3000, 0, 2)
	if _, err := exec.LookPath("docker"); err != nil {
		b.Skip("no docker command to compare with")
	}
	for _, data := range []struct{ name, dir string }{{"large", large}, {"small", small}} {
		c := copier{m: m, project: project, id: st.ContainerID, files: files, src: data.dir, tag: data.name}
		size := treeBytes(b, data.dir)
		b.Run("upload/"+data.name, func(b *testing.B) { c.run(b, size, c.upload, c.dockerUpload) })
		b.Run("download/"+data.name, func(b *testing.B) { c.run(b, size, c.download, c.dockerDownload) })
	}
}

// copier runs one kind of copy b.N times, each to a new place.
type copier struct {
	m       *service.Manager
	project string
	id      string
	files   *sandboxfs.FS
	src     string
	tag     string
}

// dir is where the copies of one benchmark go in the sandbox, each to a
// new place: docker cp makes its copies root's, which the sandbox user
// could not remove between runs.
func (c copier) dir(tool string) string { return "/home/sandbox/bench/" + c.tag + "/" + tool }

func (c copier) run(b *testing.B, size int64, pilot, dockerCp func(b *testing.B, i int)) {
	// What the downloads read, and the directories the uploads go into.
	// The tree has a read-only directory, which the sandbox user, who
	// writes an upload, cannot write into again: an earlier run's copy is
	// removed first.
	c.sh(b, "chmod -R u+w "+c.dir("src")+" 2>/dev/null; rm -rf "+c.dir("src"))
	if _, err := c.files.Upload(context.Background(), c.src, c.dir("src")); err != nil {
		b.Fatal(err)
	}
	c.sh(b, "mkdir -p "+c.dir("pilot")+" "+c.dir("docker"))
	var ours, theirs time.Duration
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		pilot(b, i)
		t1 := time.Now()
		dockerCp(b, i)
		ours, theirs = ours+t1.Sub(t0), theirs+time.Since(t1)
	}
	mbps := func(d time.Duration) float64 { return float64(size) * float64(b.N) / 1e6 / d.Seconds() }
	b.ReportMetric(mbps(ours), "pilot-MB/s")
	b.ReportMetric(mbps(theirs), "dockercp-MB/s")
	b.ReportMetric(ours.Seconds()/theirs.Seconds(), "pilot/dockercp")
}

func (c copier) upload(b *testing.B, i int) {
	if _, err := c.files.Upload(context.Background(), c.src, c.dir("pilot")+"/"+strconv.Itoa(i)); err != nil {
		b.Fatal(err)
	}
}

func (c copier) download(b *testing.B, i int) {
	if _, err := c.files.Download(context.Background(), c.dir("src"), filepath.Join(b.TempDir(), strconv.Itoa(i)), false); err != nil {
		b.Fatal(err)
	}
}

func (c copier) dockerUpload(b *testing.B, i int) {
	if out, err := exec.Command("docker", "cp", c.src, c.id+":"+c.dir("docker")+"/"+strconv.Itoa(i)).CombinedOutput(); err != nil {
		b.Fatalf("docker cp: %v %s", err, out)
	}
}

func (c copier) dockerDownload(b *testing.B, i int) {
	dest := filepath.Join(b.TempDir(), strconv.Itoa(i))
	if out, err := exec.Command("docker", "cp", c.id+":"+c.dir("src"), dest).CombinedOutput(); err != nil {
		b.Fatalf("docker cp: %v %s", err, out)
	}
}

func (c copier) sh(b *testing.B, command string) {
	out, err := c.m.Exec(context.Background(), c.project, service.ExecRequest{Command: command, Timeout: time.Minute})
	if err != nil || out.ExitCode != 0 {
		b.Fatalf("%s: %v %+v", command, err, out)
	}
}

func treeBytes(b *testing.B, dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return err
	})
	return n
}
