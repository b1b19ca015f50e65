package launcher

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/mutant"
	"github.com/quorate-dev/quorate/internal/names"
)

// The write-ahead log's record types (etcd's server/storage/wal): every WAL file begins with a
// CRC record, then the metadata record, whose data is etcdserverpb.Metadata.
const (
	walMetadataRecord = 1
	walCRCRecord      = 4
)

// DataIdentity is the member and cluster etcd wrote its data directory for, as the head of
// its write-ahead log records them (etcd keeps both for the life of the data: a forced
// recovery rewrites the membership, not these).
type DataIdentity struct {
	MemberID, ClusterID uint64
}

// ReadDataIdentity reads the identity at the head of the oldest readable WAL file in dataDir.
// An error means nothing is known (no WAL yet, or none readable): it never stands for a
// mismatch.
func ReadDataIdentity(dataDir string) (DataIdentity, error) {
	walDir := filepath.Join(dataDir, "member", "wal")
	entries, err := os.ReadDir(walDir)
	if err != nil {
		return DataIdentity{}, err
	}
	var files []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".wal") && e.Type().IsRegular() {
			files = append(files, e.Name())
		}
	}
	if len(files) == 0 {
		return DataIdentity{}, fmt.Errorf("%s holds no WAL file", walDir)
	}
	slices.Sort(files)
	// Every file begins with the identity; a file that cannot be read (cut short, damaged, a
	// stray one etcd itself would skip) gives way to the next.
	var errs []error
	for _, name := range files {
		id, err := walFileIdentity(filepath.Join(walDir, name))
		if err == nil {
			return id, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	return DataIdentity{}, errors.Join(errs...)
}

// walFileIdentity reads the identity at the head of one WAL file.
func walFileIdentity(path string) (DataIdentity, error) {
	f, err := os.Open(path) //nolint:gosec // a file of the member's own data directory
	if err != nil {
		return DataIdentity{}, err
	}
	defer f.Close()
	for range 2 {
		typ, data, err := readWALRecord(f)
		if err != nil {
			return DataIdentity{}, err
		}
		switch typ {
		case walCRCRecord:
			continue
		case walMetadataRecord:
			return decodeMetadata(data)
		default:
			return DataIdentity{}, fmt.Errorf("record of type %d before the metadata", typ)
		}
	}
	return DataIdentity{}, errors.New("no metadata record at its head")
}

// readWALRecord reads one frame (a little-endian length whose top byte may carry the padding,
// then the walpb.Record) and returns the record's type and data.
func readWALRecord(r io.Reader) (int64, []byte, error) {
	var lenField uint64
	if err := binary.Read(r, binary.LittleEndian, &lenField); err != nil {
		return 0, nil, err
	}
	size := lenField &^ (uint64(0xff) << 56)
	var pad uint64
	if lenField&(uint64(0x80)<<56) != 0 {
		pad = (lenField >> 56) & 0x7
	}
	if size == 0 || size > 1<<20 {
		return 0, nil, fmt.Errorf("a record of %d bytes at the head of the log", size)
	}
	buf := make([]byte, size+pad)
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, nil, err
	}
	var typ int64
	var data []byte
	b := buf[:size]
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, nil, protowire.ParseError(n)
		}
		b = b[n:]
		switch {
		case num == 1 && wt == protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return 0, nil, protowire.ParseError(m)
			}
			typ, b = int64(v), b[m:] //nolint:gosec // a protobuf int64 is sent as its two's complement
		case num == 3 && wt == protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return 0, nil, protowire.ParseError(m)
			}
			data, b = v, b[m:]
		default:
			m := protowire.ConsumeFieldValue(num, wt, b)
			if m < 0 {
				return 0, nil, protowire.ParseError(m)
			}
			b = b[m:]
		}
	}
	return typ, data, nil
}

// decodeMetadata decodes etcdserverpb.Metadata{NodeID = 1, ClusterID = 2}.
func decodeMetadata(b []byte) (DataIdentity, error) {
	var id DataIdentity
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 {
			return DataIdentity{}, protowire.ParseError(n)
		}
		b = b[n:]
		if wt != protowire.VarintType {
			m := protowire.ConsumeFieldValue(num, wt, b)
			if m < 0 {
				return DataIdentity{}, protowire.ParseError(m)
			}
			b = b[m:]
			continue
		}
		v, m := protowire.ConsumeVarint(b)
		if m < 0 {
			return DataIdentity{}, protowire.ParseError(m)
		}
		b = b[m:]
		switch num {
		case 1:
			id.MemberID = v
		case 2:
			id.ClusterID = v
		}
	}
	if id.MemberID == 0 || id.ClusterID == 0 {
		return DataIdentity{}, errors.New("the WAL's metadata names no member or no cluster")
	}
	return id, nil
}

// mismatch is the refusal of data that is not the marker's member of the marker's cluster:
// another member's or another cluster's data put on this volume (a copied or swapped disk, a
// restore by hand). Started, etcd would serve that data to this cluster's clients through its
// Service. It is nil when the data is the marker's, or when either side records nothing.
// serving says the identity is etcd's answer, not the log's head.
func (id DataIdentity) mismatch(marker *Marker, dataDir string, serving bool) *Refusal {
	if marker == nil || marker.ClusterID == "" || marker.MemberID == "" || mutant.On("launcher-trusts-marker") {
		return nil
	}
	// As numbers: a marker written in another hex form (zero-padded) names the same IDs.
	cluster, cerr := names.ParseID(marker.ClusterID)
	member, merr := names.ParseID(marker.MemberID)
	if cerr != nil || merr != nil || (cluster == id.ClusterID && member == id.MemberID) {
		return nil
	}
	return DataMismatch(dataDir, id, *marker, serving)
}

// DataMismatch is the refusal of the data in dataDir, which is id, behind marker: found at the
// head of its write-ahead log before etcd starts, or (serving) in etcd's answer once it runs.
func DataMismatch(dataDir string, id DataIdentity, marker Marker, serving bool) *Refusal {
	what := fmt.Sprintf("the data in %s is member %s of etcd cluster %s", dataDir, names.FormatID(id.MemberID), names.FormatID(id.ClusterID))
	if serving {
		what = fmt.Sprintf("etcd, started on %s, answers as member %s of etcd cluster %s", dataDir, names.FormatID(id.MemberID), names.FormatID(id.ClusterID))
	}
	todo := "another cluster's data was put on this volume; refusing to serve it. Delete the member's PVC if that data is not needed: the member is then replaced"
	if c, err := names.ParseID(marker.ClusterID); err == nil && c == id.ClusterID {
		todo = "another member's data of this cluster was put on this volume; refusing to start it as this member. Put each member's data back on its own volume; if this member's own data is lost, delete its PVC: the member is then replaced"
	}
	return &Refusal{Kind: RefusalClusterIDMismatch, Message: fmt.Sprintf("%s, but the volume's marker records member %s (%s) of cluster %s: %s",
		what, marker.MemberID, marker.Member, marker.ClusterID, todo)}
}

// verifyServing is the second line behind Volume.Check, for data whose log could not be read
// before the start: once etcd answers, it must answer as the marker's member of the marker's
// cluster. A mismatch is returned as the refusal (the caller stops etcd); nil when it matches
// or ctx ends first.
func verifyServing(ctx context.Context, o Options, marker *Marker, tlsCfg *tls.Config) error {
	self := etcd.Endpoint{Member: o.Member, Address: net.JoinHostPort("127.0.0.1", fmt.Sprint(names.ClientPort))}
	for {
		if c, err := etcd.NewClient(ctx, etcd.Config{Endpoints: []etcd.Endpoint{self}, TLS: tlsCfg, Timeout: 3 * time.Second}); err == nil {
			st, err := c.Status(ctx, self)
			c.Close()
			if err == nil && st.ClusterID != 0 {
				if r := (DataIdentity{MemberID: st.MemberID, ClusterID: st.ClusterID}).mismatch(marker, o.DataDir, true); r != nil {
					return r
				}
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}
