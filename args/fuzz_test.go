package args_test

import (
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/args"
	"github.com/pilot-sandbox/pilot-sandbox/args/argstest"
)

// FuzzDecodeAgreesWithValidate checks that the decoder accepts what
// jsonschema-go's validator accepts, and refuses the rest with an error
// naming the field (argstest.Agree).
func FuzzDecodeAgreesWithValidate(f *testing.F) {
	for _, raw := range args.DecodeSeeds() {
		f.Add([]byte(raw))
	}
	resolved := argstest.Resolve(f, args.SampleSpec.Schema())
	decode := func(raw []byte) error { _, err := args.SampleSpec.Decode(raw); return err }
	f.Fuzz(func(t *testing.T, raw []byte) {
		argstest.Agree(t, resolved, decode, raw)
	})
}
