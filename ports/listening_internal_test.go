package ports

import (
	"reflect"
	"testing"
)

func TestParseListeningReadsTheKernelsTables(t *testing.T) {
	out := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:2260 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4001 1 0000000000000000 100 0 0 10 0
   1: 00000000:170C 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4002 1 0000000000000000 100 0 0 10 0
   2: 0100007F:2260 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000  1000        0 4003 1 0000000000000000 20 4 30 10 -1
  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:2260 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4004 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4005 1 0000000000000000 100 0 0 10 0
--
/proc/42/fd socket:[4003]
/proc/42/fd socket:[4001]
/proc/43/fd socket:[4002]
/proc/44/fd pipe:[9]
--
42 python3
43 Xvfb and more
`
	want := []Listening{{Port: 5900, Process: "Xvfb and more", usersOwn: true}, {Port: 8080}, {Port: 8800, Process: "python3", usersOwn: true}}
	if got := parseListening([]byte(out)); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if got := parseListening(nil); len(got) != 0 {
		t.Errorf("nothing: %+v", got)
	}
}
