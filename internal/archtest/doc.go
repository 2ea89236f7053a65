// Package archtest holds the test that keeps the imports between the
// module's packages, and the packages that use the third-party libraries
// it names, as docs/architecture.md draws them (imports_test.go), and
// package service at most 15 files (size_test.go). It has
// no code of its own.
package archtest
