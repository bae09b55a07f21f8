package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/bbengine/bbengine/codec/bbox"
	ucli "github.com/urfave/cli/v2"
)

// readDoc reads a bbox document from path ("-" for stdin). A path ending in
// .jsonl is read as the JSONL alternative.
func readDoc(c *ucli.Context, path string) (*bbox.Document, error) {
	var r io.Reader
	if path == "-" {
		r = c.App.Reader
		if r == nil {
			r = os.Stdin
		}
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	if strings.HasSuffix(path, ".jsonl") {
		return bbox.ReadJSONL(r, path)
	}
	doc, err := bbox.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return doc, nil
}
