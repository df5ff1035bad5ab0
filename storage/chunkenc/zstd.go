package chunkenc

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// zstd wrapping of a float column body: after the tag (with floatTagZstd set)
// come uvarint raw length, uvarint compressed length, then one zstd frame that
// decompresses to exactly raw length bytes: the body the base tag describes.

// maxZstdBody bounds a decompressed body: the XOR worst case is 77 bits per
// value, so ten bytes per value of MaxColumnLen covers every body the encoder
// writes.
const maxZstdBody = 10 * MaxColumnLen

var (
	zstdOnce sync.Once
	zstdEnc  *zstd.Encoder
	zstdDec  *zstd.Decoder
)

func zstdCodecs() (*zstd.Encoder, *zstd.Decoder) {
	zstdOnce.Do(func() {
		var err error
		// EncodeAll and DecodeAll are safe for concurrent use; concurrency 1
		// keeps them from starting goroutines per call.
		zstdEnc, err = zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.SpeedBetterCompression),
			zstd.WithEncoderConcurrency(1),
			zstd.WithEncoderCRC(false))
		if err != nil {
			panic("BUG: zstd encoder options: " + err.Error())
		}
		zstdDec, err = zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(maxZstdBody),
			zstd.IgnoreChecksum(true))
		if err != nil {
			panic("BUG: zstd decoder options: " + err.Error())
		}
	})
	return zstdEnc, zstdDec
}

// zstdMinGainDiv: zstd must save at least 1/zstdMinGainDiv of a body to be
// used. Decompressing costs more than unpacking bits, and a few percent of
// one column is not worth slower reads of every query that touches it.
const zstdMinGainDiv = 8

// tryZstd replaces the column body dst[start:] (tag byte first) with its zstd
// form when that is smaller.
func tryZstd(dst []byte, start int) []byte {
	enc, _ := zstdCodecs()
	body := dst[start+1:]
	buf := getBytes()
	defer putBytes(buf)
	comp := enc.EncodeAll(body, (*buf)[:0])
	*buf = comp
	size := 1 + uvarintLen(uint64(len(body))) + uvarintLen(uint64(len(comp))) + len(comp)
	if plain := len(dst) - start; size > plain-plain/zstdMinGainDiv {
		return dst
	}
	tag := dst[start] | floatTagZstd
	rawLen := len(body)
	dst = append(dst[:start], tag)
	dst = binary.AppendUvarint(dst, uint64(rawLen))
	dst = binary.AppendUvarint(dst, uint64(len(comp)))
	return append(dst, comp...)
}

// readZstd reads a compressed body and returns it decompressed in a buffer
// from the byte pool (return it with putBytes once done), and the rest of
// src.
func readZstd(src []byte) (body *[]byte, rest []byte, err error) {
	rawLen, src, err := readCount(src, "zstd raw length", maxZstdBody)
	if err != nil {
		return nil, src, err
	}
	compLen64, src, err := readUvarint(src, "zstd compressed length")
	if err != nil {
		return nil, src, err
	}
	if compLen64 > uint64(len(src)) {
		return nil, src, fmt.Errorf("zstd frame of %d bytes, %d left: %w", compLen64, len(src), ErrCorrupt)
	}
	compLen := int(compLen64)
	_, dec := zstdCodecs()
	buf := getBytes()
	out, err := dec.DecodeAll(src[:compLen], (*buf)[:0])
	if cap(out) > cap(*buf) {
		*buf = out[:0] // keep the grown buffer for the next decode
	}
	if err != nil {
		putBytes(buf)
		return nil, src, fmt.Errorf("zstd: %w: %w", ErrCorrupt, err)
	}
	if len(out) != rawLen {
		putBytes(buf)
		return nil, src, fmt.Errorf("zstd body is %d bytes, header says %d: %w", len(out), rawLen, ErrCorrupt)
	}
	*buf = out
	return buf, src[compLen:], nil
}

var bytesPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func getBytes() *[]byte { return bytesPool.Get().(*[]byte) }

func putBytes(b *[]byte) {
	if cap(*b) > maxPooledScratch*8 {
		return
	}
	bytesPool.Put(b)
}
