// Package crypt owns bbengine's encryption at rest: the key hierarchy of
// an encrypted data directory and the encrypted file format that Pebble's
// files, Bluge's segments and blobs are written in. The WAL encrypts its
// frames itself (codec/frame, wal) with data keys from here.
//
// One cipher is used everywhere: AES-256-GCM from the standard library,
// with a random 96-bit nonce per message, under a fresh random data key
// per file (a WAL segment, a Pebble file, a Bluge segment, a blob).
//
// Keys (docs/design/encryption.md section 6):
//
//	unlock slot (one or more) --wraps--> root key RK (32 B)
//	  passphrase: argon2id                 |
//	  age: X25519 identity                 +--wraps--> generation keys G1, G2, ...
//	  keyring: OS secret store             |              |
//	                                       |              +--wraps--> data keys (one per file)
//	                                       +--wraps--> blob name key (HMAC), never rotated
//
// Every wrap is AES-256-GCM with a random nonce: 12 + 32 + 16 = 60 bytes.
// Its associated data names the role of the key and the data directory's
// id, so a wrapped key cannot be moved to another role, file or directory.
//
// The hierarchy lives in <dir>/keys.json (KeysFile, 0600; format in
// docs/format/crypt.md). Its presence makes a directory encrypted
// (Exists). Init writes it; Unlock opens it with a passphrase, age
// identities or the OS keyring; ReadInfo describes it without a key.
// AddSlot, RemoveSlot, RotateRoot and NewGeneration rewrite only
// keys.json, atomically: no data file changes. Three checks guard it:
//
//	every binary field   base64(bytes || CRC-32C(bytes)): damage is named
//	                     without any key
//	every wrap           AES-256-GCM, AAD "bbengine-keys/1 root|gen|names"
//	                     || dir id || slot type or generation id
//	the whole file       "mac": HMAC-SHA256 under a key derived from the
//	                     root key, checked once a slot opened, so an edit
//	                     of "active", "retired", a recipient or the kdf
//	                     parameters is caught
//
// An unlocked *Keys changes only through those methods (a new root key, a
// new active generation) and is safe for concurrent use.
//
// The encrypted file (format in docs/format/crypt.md) starts with a
// 128-byte header that holds the file's own wrapped data key, so a file
// can be linked, renamed, copied or backed up with nothing beside it:
//
//	0   "BBCRYPT\x00"
//	8   u8 version (1)       9 u8 shape (1 chunked, 2 records)
//	10  u8 cipher (1 = AES-256-GCM)  11 u8 log2 chunk size
//	12  u32 generation
//	16  [16] file salt (random)
//	32  [60] wrapped data key; AAD = header[0:32] || dir id || the file's AAD
//	92  u32 CRC-32C of header[0:92]
//	96  [32] reserved, zero
//
// A chunked file follows with chunks of 2^log2 plaintext bytes, each
// nonce[12] || ciphertext || tag[16], AAD = salt || u64 chunk index ||
// u8 last; the last chunk (possibly empty) has last = 1, so a file cut at
// a chunk boundary is detected.
//
// A records file (records.go) follows with one record per write,
// u32 len || nonce[12] || ciphertext || tag[16], AAD = salt || u64
// plaintext offset, appended and never rewritten: an invalid record with
// no valid one after it is the torn tail of a crash, read as end of file.
//
// Of bbengine's packages it imports only internal/private and
// internal/safefile, which write keys.json.
package crypt
