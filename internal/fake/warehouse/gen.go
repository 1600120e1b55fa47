package warehouse

// The Thrift code in tcli/ is generated from idl/tcli_min.thrift and committed, so building and
// testing need no compiler. Regenerating needs the `thrift` compiler (0.17 or later; Debian:
// apt-get install thrift-compiler).
//go:generate sh gen.sh
