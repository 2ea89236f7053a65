package args

// What the external tests use of this package's tests.
var SampleSpec = sampleSpec

// DecodeSeeds are the decode cases short enough to seed a fuzzer: with the
// long ones the fuzzer spends its time minimizing instead of searching.
func DecodeSeeds() []string {
	var out []string
	for _, tc := range decodeCases {
		if len(tc.raw) < 300 {
			out = append(out, tc.raw)
		}
	}
	return out
}
