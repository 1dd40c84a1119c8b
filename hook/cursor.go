package hook

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/countersign/countersign/store"
)

// A cursor is where a page of GET /v1/requests ended, for the next page to
// continue after: the last request's created_at and id
// (store.RequestPosition), which never change, so a listing neither repeats
// nor skips a request while new ones arrive. Clients hold it as an opaque
// string. It is base64url, unpadded, of a version byte, created_at in unix
// microseconds (8 bytes, big-endian), the id's 16 bytes and the first 4
// bytes of the sha256 of all that: a cursor edited, cut short or made up is
// refused rather than read as some other position. It is not a secret and
// needs none: a position made by hand would still list only what the agent
// may see.
const (
	cursorVersion = 1
	cursorBody    = 1 + 8 + 16
	cursorCheck   = 4
)

// encodeCursor returns the cursor of position p.
func encodeCursor(p store.RequestPosition) (string, error) {
	id, err := hex.DecodeString(strings.ReplaceAll(p.ID, "-", ""))
	if err != nil || len(id) != 16 {
		return "", fmt.Errorf("making a cursor: request id %q is not a UUID", p.ID)
	}
	b := make([]byte, 0, cursorBody+cursorCheck)
	b = append(b, cursorVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(p.CreatedAt.UnixMicro()))
	b = append(b, id...)
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(append(b, sum[:cursorCheck]...)), nil
}

// errCursor is any cursor that is not one encodeCursor made.
var errCursor = errors.New("cursor is not one this API returned: pass next_cursor exactly as it came, or leave it out for the first page")

// decodeCursor returns the position a cursor holds.
func decodeCursor(s string) (store.RequestPosition, error) {
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) != cursorBody+cursorCheck || b[0] != cursorVersion {
		return store.RequestPosition{}, errCursor
	}
	body, check := b[:cursorBody], b[cursorBody:]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:cursorCheck], check) {
		return store.RequestPosition{}, errCursor
	}
	id := hex.EncodeToString(body[9:])
	return store.RequestPosition{
		CreatedAt: time.UnixMicro(int64(binary.BigEndian.Uint64(body[1:9]))).UTC(),
		ID:        id[:8] + "-" + id[8:12] + "-" + id[12:16] + "-" + id[16:20] + "-" + id[20:],
	}, nil
}
