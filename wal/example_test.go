package wal_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/wal"
)

func Example() {
	dir, _ := os.MkdirTemp("", "wal")
	defer os.RemoveAll(dir)

	l, err := wal.Open(dir, nil) // nil options: 64 MiB segments, sync every 100 ms
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	off, err := l.Append(wal.Record{Kind: frame.KindRequestStart, Exchange: 1, Payload: []byte("POST /v1/messages")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("appended at", off)

	r := l.NewReader()
	defer r.Close()
	if err := r.Seek(off); err != nil {
		log.Fatal(err)
	}
	for r.Next() {
		p, _ := r.Payload()
		fmt.Printf("%d %v %s\n", r.Offset(), r.Header().Kind, p)
	}
	if err := r.Err(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// appended at 48
	// 48 request-start POST /v1/messages
}

func ExampleReader_Wait() {
	dir, _ := os.MkdirTemp("", "wal")
	defer os.RemoveAll(dir)
	l, _ := wal.Open(dir, nil)
	defer l.Close()

	go func() {
		for i := range 3 {
			l.Append(wal.Record{Kind: frame.KindResponseBody, Exchange: 7, Last: i == 2, Payload: []byte(fmt.Sprint("chunk ", i))})
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r := l.NewReader()
	defer r.Close()
	for {
		for r.Next() {
			h := r.Header()
			if h.Kind != frame.KindResponseBody {
				continue
			}
			p, _ := r.Payload()
			fmt.Printf("%s\n", p)
			if h.Flags&frame.FlagLast != 0 {
				return
			}
		}
		if err := r.Wait(ctx); err != nil { // block until the writer appends more
			log.Fatal(err)
		}
	}
	// Output:
	// chunk 0
	// chunk 1
	// chunk 2
}

func ExampleReader_Seek() {
	dir, _ := os.MkdirTemp("", "wal")
	defer os.RemoveAll(dir)
	l, _ := wal.Open(dir, nil)
	defer l.Close()
	off, _ := l.Append(wal.Record{Kind: frame.KindImport, Payload: []byte("one record")})

	r := l.NewReader()
	defer r.Close()
	err := r.Seek(off + 3)
	var be *wal.BoundaryError
	if errors.As(err, &be) {
		fmt.Println("not a boundary; next frame at", be.Next)
	}
	// Output:
	// not a boundary; next frame at 98
}

func ExampleRepair() {
	dir, _ := os.MkdirTemp("", "wal")
	defer os.RemoveAll(dir)
	l, _ := wal.Open(dir, nil)
	for i := range 3 {
		l.Append(wal.Record{Kind: frame.KindToolEvent, Payload: []byte(fmt.Sprint("event ", i))})
	}
	l.Close()

	// Damage the first event; the two after it are still valid frames.
	seg := filepath.Join(dir, "0000000000000000.wal")
	b, _ := os.ReadFile(seg)
	b[48+frame.HeaderLen] ^= 0xff
	os.WriteFile(seg, b, 0o644)

	_, err := wal.Open(dir, nil)
	var ce *wal.CorruptionError
	if errors.As(err, &ce) {
		fmt.Println("corrupt at offset", ce.Offset)
	}
	fixed, _ := wal.Repair(dir) // keeps <segment>.damaged-<time>, truncates
	fmt.Println("truncated at", fixed[0].Offset, "dropped", fixed[0].Dropped, "bytes")
	l, err = wal.Open(dir, nil)
	fmt.Println(err)
	l.Close()
	// Output:
	// corrupt at offset 48
	// truncated at 48 dropped 141 bytes
	// <nil>
}

func ExampleLog_Pin() {
	dir, _ := os.MkdirTemp("", "wal")
	defer os.RemoveAll(dir)
	l, _ := wal.Open(dir, &wal.Options{RetentionAge: 30 * 24 * time.Hour})
	defer l.Close()
	first, _ := l.Append(wal.Record{Kind: frame.KindRequestStart, Payload: []byte("session start")})
	last, _ := l.Append(wal.Record{Kind: frame.KindResponseEnd, Payload: []byte("session end")})
	l.Pin("session:abc", first, last) // retention keeps these segments
	defer l.Unpin("session:abc")
	fmt.Println(first < last)
	// Output: true
}
