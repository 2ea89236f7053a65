package egress

import (
	"container/list"
	"net/netip"
	"sync"
)

// synthetic is where the addresses of DNS answers come from: 198.18.0.0/15,
// set aside for benchmarking networks (RFC 2544), which no destination on
// the internet uses. A connection to one is judged by the name it was
// given for; nothing of the lookup leaves the sandbox.
var synthetic = netip.MustParsePrefix("198.18.0.0/15")

// syntheticSize is how many addresses the range holds.
const syntheticSize = 1 << 17

// bookSize bounds the names one sandbox run keeps. An address is given
// out again only after every other address of the range, so one whose
// name was forgotten is refused as stale rather than taken for another
// name.
const bookSize = 4096

// addressBook gives each name a synthetic address and finds the name of
// an address, for one sandbox run, forgetting the least recently used
// names beyond bookSize.
type addressBook struct {
	mu     sync.Mutex // guards the fields below
	byName map[string]*list.Element
	byAddr map[netip.Addr]*list.Element
	order  *list.List // of *bookEntry, most recently used first
	next   uint32     // the offset in synthetic of the next address
}

type bookEntry struct {
	name string
	addr netip.Addr
}

func newAddressBook() *addressBook {
	return &addressBook{
		byName: map[string]*list.Element{},
		byAddr: map[netip.Addr]*list.Element{},
		order:  list.New(),
		next:   1,
	}
}

// addressOf returns name's address, giving it one if it has none.
func (b *addressBook) addressOf(name string) netip.Addr {
	b.mu.Lock()
	defer b.mu.Unlock()
	if el, ok := b.byName[name]; ok {
		b.order.MoveToFront(el)
		return el.Value.(*bookEntry).addr
	}
	if b.order.Len() >= bookSize {
		old := b.order.Remove(b.order.Back()).(*bookEntry)
		delete(b.byName, old.name)
		delete(b.byAddr, old.addr)
	}
	addr := b.freeAddress()
	el := b.order.PushFront(&bookEntry{name: name, addr: addr})
	b.byName[name], b.byAddr[addr] = el, el
	return addr
}

// freeAddress is the next address of the range no name holds, skipping
// the range's first and last. Called with mu held; bookSize is far below
// the range's size, so it finds one within bookSize+1 steps.
func (b *addressBook) freeAddress() netip.Addr {
	base := synthetic.Addr().As4()
	start := uint32(base[0])<<24 | uint32(base[1])<<16
	for {
		off := b.next
		b.next = b.next%(syntheticSize-2) + 1
		v := start + off
		addr := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
		if _, taken := b.byAddr[addr]; !taken {
			return addr
		}
	}
}

// nameOf returns the name an address was given for, if the book still
// holds it.
func (b *addressBook) nameOf(a netip.Addr) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	el, ok := b.byAddr[a.Unmap()]
	if !ok {
		return "", false
	}
	b.order.MoveToFront(el)
	return el.Value.(*bookEntry).name, true
}
