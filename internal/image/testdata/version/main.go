// A stand-in for the backflow binary in the image test: built in seconds,
// static, and answering "version" as cmd/backflow does, with the version
// set by the same -ldflags "-X main.version=...".
package main

import (
	"fmt"
	"os"
	"runtime"
)

var version = ""

func main() {
	if len(os.Args) != 2 || os.Args[1] != "version" {
		fmt.Fprintln(os.Stderr, "usage: version")
		os.Exit(2)
	}
	fmt.Printf("backflow %s (%s, %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
