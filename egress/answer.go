package egress

import (
	"context"
	"net"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// answerTTL is the TTL of a synthetic answer, in seconds: short, so that
// programs ask again (and the book's least recently used names are the
// ones no program holds any more).
const answerTTL = 10

// lookupTimeout bounds a lookup of another type than A for the sandbox:
// the judge (which must not ask the user for it) and the host's resolver.
const lookupTimeout = 3 * time.Second

// maxUDPAnswer is the longest answer sent over UDP; a longer one goes out
// truncated, and the client asks again over TCP (RFC 1035 4.2.1).
const maxUDPAnswer = 512

// Resolver looks up what the sandbox may learn of an allowed name beyond
// its address: *net.Resolver is one (the host's own resolver).
type Resolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
	LookupMX(ctx context.Context, name string) ([]*net.MX, error)
	LookupSRV(ctx context.Context, service, proto, name string) (string, []*net.SRV, error)
	LookupCNAME(ctx context.Context, name string) (string, error)
	LookupNS(ctx context.Context, name string) ([]*net.NS, error)
}

// answer is the reply to one raw query from the sandbox, or nil for
// something that is not a query at all. An A question gets the name's
// synthetic address, AAAA none (the sandbox has no IPv6 way out), and
// other types what the host's resolver says, for names the judge allows.
func (s *sandbox) answer(ctx context.Context, query []byte, proto string) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil || h.Response {
		return nil
	}
	qs, err := p.AllQuestions()
	if err != nil || len(qs) != 1 {
		return reply(h, nil, dnsmessage.RCodeFormatError, nil, proto)
	}
	q := qs[0]
	name, ok := hostName(q.Name.String())
	if !ok || q.Class != dnsmessage.ClassINET {
		return reply(h, &q, dnsmessage.RCodeRefused, nil, proto)
	}
	switch q.Type {
	case dnsmessage.TypeA:
		a := dnsmessage.AResource{A: s.book.addressOf(name).As4()}
		return reply(h, &q, dnsmessage.RCodeSuccess, []dnsmessage.Resource{resource(q, &a)}, proto)
	case dnsmessage.TypeAAAA:
		return reply(h, &q, dnsmessage.RCodeSuccess, nil, proto)
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	d := s.judge.Judge(ctx, Request{Project: s.project, Names: []string{name}, Protocol: proto})
	if !d.Allow {
		return reply(h, &q, dnsmessage.RCodeRefused, nil, proto)
	}
	bodies, err := lookupOther(ctx, s.resolver, q.Type, name)
	if err != nil {
		return reply(h, &q, dnsmessage.RCodeNameError, nil, proto)
	}
	answers := make([]dnsmessage.Resource, 0, len(bodies))
	for _, b := range bodies {
		answers = append(answers, resource(q, b))
	}
	return reply(h, &q, dnsmessage.RCodeSuccess, answers, proto)
}

func resource(q dnsmessage.Question, body dnsmessage.ResourceBody) dnsmessage.Resource {
	return dnsmessage.Resource{
		Header: dnsmessage.ResourceHeader{Name: q.Name, Type: q.Type, Class: q.Class, TTL: answerTTL},
		Body:   body,
	}
}

// reply packs an answer to h's query; over UDP, one too long for a
// datagram goes out without its records and marked truncated.
func reply(h dnsmessage.Header, q *dnsmessage.Question, rcode dnsmessage.RCode, answers []dnsmessage.Resource, proto string) []byte {
	m := dnsmessage.Message{
		Header: dnsmessage.Header{ID: h.ID, Response: true, OpCode: h.OpCode,
			RecursionDesired: h.RecursionDesired, RecursionAvailable: true, RCode: rcode},
		Answers: answers,
	}
	if q != nil {
		m.Questions = []dnsmessage.Question{*q}
	}
	out, err := m.Pack()
	if err == nil && proto == "udp" && len(out) > maxUDPAnswer {
		m.Answers, m.Header.Truncated = nil, true
		out, err = m.Pack()
	}
	if err != nil {
		return nil
	}
	return out
}

// lookupOther asks the host's resolver for records of type t (no A or
// AAAA: those the sandbox never gets for real).
func lookupOther(ctx context.Context, r Resolver, t dnsmessage.Type, name string) ([]dnsmessage.ResourceBody, error) {
	var out []dnsmessage.ResourceBody
	switch t {
	case dnsmessage.TypeTXT:
		txts, err := r.LookupTXT(ctx, name)
		for _, txt := range txts {
			out = append(out, &dnsmessage.TXTResource{TXT: chunks(txt, 255)})
		}
		return out, err
	case dnsmessage.TypeMX:
		mxs, err := r.LookupMX(ctx, name)
		for _, mx := range mxs {
			if n, nerr := dnsmessage.NewName(fqdn(mx.Host)); nerr == nil {
				out = append(out, &dnsmessage.MXResource{Pref: mx.Pref, MX: n})
			}
		}
		return out, err
	case dnsmessage.TypeSRV:
		_, srvs, err := r.LookupSRV(ctx, "", "", name)
		for _, s := range srvs {
			if n, nerr := dnsmessage.NewName(fqdn(s.Target)); nerr == nil {
				out = append(out, &dnsmessage.SRVResource{Priority: s.Priority, Weight: s.Weight, Port: s.Port, Target: n})
			}
		}
		return out, err
	case dnsmessage.TypeCNAME:
		cname, err := r.LookupCNAME(ctx, name)
		if n, nerr := dnsmessage.NewName(fqdn(cname)); err == nil && nerr == nil {
			out = append(out, &dnsmessage.CNAMEResource{CNAME: n})
		}
		return out, err
	case dnsmessage.TypeNS:
		nss, err := r.LookupNS(ctx, name)
		for _, ns := range nss {
			if n, nerr := dnsmessage.NewName(fqdn(ns.Host)); nerr == nil {
				out = append(out, &dnsmessage.NSResource{NS: n})
			}
		}
		return out, err
	}
	return nil, errNotServed
}

func fqdn(s string) string {
	if len(s) > 0 && s[len(s)-1] == '.' {
		return s
	}
	return s + "."
}

// chunks splits s into strings of at most n bytes (a TXT record's
// character-strings).
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}
