package archive

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
)

// memStore is a Store in memory.
type memStore struct {
	mu   sync.Mutex
	objs map[string][]byte
	// fail, when set, is returned by Put.
	fail error
}

func newMemStore() *memStore { return &memStore{objs: map[string][]byte{}} }

func (m *memStore) Put(_ context.Context, name string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.objs[name] = append([]byte(nil), data...)
	return nil
}

func (m *memStore) Get(_ context.Context, name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.objs[name]
	if !ok {
		return nil, errors.New("no such object " + name)
	}
	return d, nil
}

func (m *memStore) List(_ context.Context, prefix string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for n := range m.objs {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}

func TestSegmentRoundTrip(t *testing.T) {
	recs := []Record{
		{Revision: 7, Time: 1000, Ops: []Op{{Type: Put, Key: []byte("a"), Value: []byte("1"), Version: 3, Lease: 5}}},
		{Revision: 8, Time: 1001, Ops: []Op{{Type: Delete, Key: []byte("a")}, {Type: Put, Key: []byte("b\x00\xff"), Value: []byte{}}}},
	}
	data, err := Encode(0xabc, recs)
	if err != nil {
		t.Fatal(err)
	}
	h, got, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	want := Header{Format: Format, ClusterID: 0xabc, First: 7, Last: 8, Records: 2}
	if h != want {
		t.Errorf("header = %+v, want %+v", h, want)
	}
	// An empty value comes back as none: etcd does not tell them apart either.
	recs[1].Ops[1].Value = nil
	if !reflect.DeepEqual(got, recs) {
		t.Errorf("records = %+v, want %+v", got, recs)
	}
}

func TestEncodeRefusesAGap(t *testing.T) {
	_, err := Encode(1, []Record{{Revision: 3}, {Revision: 5}})
	if err == nil || err.Error() != "revision 5 follows 3: a segment's revisions are contiguous" {
		t.Errorf("err = %v", err)
	}
	if _, err := Encode(1, nil); err == nil || err.Error() != "a segment holds at least one record" {
		t.Errorf("err = %v", err)
	}
}

func TestDecodeRefusesACutShortSegment(t *testing.T) {
	data, err := Encode(1, []Record{{Revision: 3, Ops: []Op{{Type: Put, Key: []byte("k")}}}, {Revision: 4, Ops: []Op{{Type: Put, Key: []byte("k")}}}})
	if err != nil {
		t.Fatal(err)
	}
	// The same segment without its last line, gzip'd whole again: its header says 2.
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(plain), "\n")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write([]byte(lines[0] + lines[1]))
	_ = zw.Close()
	_, _, err = Decode(buf.Bytes())
	if err == nil || err.Error() != "the segment holds 1 records; its header says 2, revisions 3 to 4: it is cut short" {
		t.Errorf("err = %v", err)
	}
	// A gzip stream cut in the middle fails too.
	if _, _, err := Decode(data[:len(data)-10]); err == nil {
		t.Error("a truncated gzip stream decoded")
	}
}

func TestSegmentNames(t *testing.T) {
	n := SegmentName("ns/c/archive", 0xabc, 12, 340)
	if n != "ns/c/archive/0000000000000abc/segments/0000000000000000012-0000000000000000340.jsonl.gz" {
		t.Fatalf("name = %s", n)
	}
	sp, ok := ParseSegmentName(n)
	if !ok || sp != (Span{Name: n, First: 12, Last: 340}) {
		t.Errorf("parsed %+v %v", sp, ok)
	}
	for _, bad := range []string{
		"ns/c/archive/0000000000000abc/segments/12-340.jsonl.gz",
		"ns/c/archive/0000000000000abc/other/0000000000000000012-0000000000000000340.jsonl.gz",
		"ns/c/archive/0000000000000abc/segments/0000000000000000340-0000000000000000012.jsonl.gz",
		"ns/c/archive/0000000000000abc/segments/0000000000000000012-0000000000000000340.json",
	} {
		if _, ok := ParseSegmentName(bad); ok {
			t.Errorf("%s parsed as a segment", bad)
		}
	}
}

func TestCover(t *testing.T) {
	spans := []Span{{Name: "a", First: 11, Last: 20}, {Name: "b", First: 21, Last: 30}, {Name: "b2", First: 15, Last: 35}, {Name: "c", First: 41, Last: 50}}
	if got := Ranges(spans); !reflect.DeepEqual(got, [][2]int64{{11, 35}, {41, 50}}) {
		t.Errorf("ranges = %v", got)
	}
	got, err := Cover(spans, 10, 33)
	if err != nil || !reflect.DeepEqual(got, []Span{spans[0], spans[2]}) {
		t.Errorf("cover 10..33 = %v, %v", got, err)
	}
	if got, err := Cover(spans, 20, 20); err != nil || got != nil {
		t.Errorf("nothing to cover: %v, %v", got, err)
	}
	_, err = Cover(spans, 30, 45)
	want := "the archive does not hold every revision from 31 to 45: it covers revisions 11–35, 41–50; choose a target within one covered range that starts at most one revision after the snapshot's"
	var ce *CoverError
	if !errors.As(err, &ce) || err.Error() != want {
		t.Errorf("err = %v\nwant  %s", err, want)
	}
	_, err = Cover(nil, 0, 3)
	if err == nil || err.Error() != "the archive does not hold every revision from 1 to 3: it covers nothing; choose a target within one covered range that starts at most one revision after the snapshot's" {
		t.Errorf("err = %v", err)
	}
}
