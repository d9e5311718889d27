// Command bad joins a key by hand under cmd, which the rule reads too.
package main

import "fmt"

func main() {
	ns, name := "default", "web"
	fmt.Println(ns + "|" + name) // found: a key concatenated under cmd
}
