package temporal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/planrunner/runner/internal/sys/boot"
)

// S3Config says where an S3-compatible store is. It holds no credential:
// those come from the standard AWS environment variables
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), the shared
// credentials file (AWS_SHARED_CREDENTIALS_FILE, AWS_PROFILE) or the
// instance's role, read by the process that talks to the store and
// written nowhere (not in remote.json, a history, a log).
type S3Config struct {
	Bucket string
	Prefix string // key prefix, "" or ending in "/"
	// Endpoint is the server, "https://host:port" or "http://host:port"
	// (default: AWS S3, or $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL).
	Endpoint string
	Region   string // default $AWS_REGION, $AWS_DEFAULT_REGION
	// PathStyle addresses the bucket as host/bucket rather than
	// bucket.host: what most self-hosted servers want.
	PathStyle bool
}

// S3Store is a Store in an S3-compatible bucket: the store to share across
// hosts. A blob is the object <prefix><name[:2]>/<name>; the identity is
// <prefix>runner-store.json.
type S3Store struct {
	cfg S3Config
	c   *minio.Client
	// timeout bounds one request, so a store that stops answering fails
	// the activity (which Temporal retries) instead of hanging it.
	timeout time.Duration
}

// s3OpTimeout is one request's bound unless --store-timeout says another.
const s3OpTimeout = boot.DefaultStoreTimeout

// ParseStoreURL reads s3://BUCKET[/PREFIX][?endpoint=URL&region=R&path_style=true]:
// the whole store as one string, so it travels as one flag value (and in
// a run's remote.json) to every process of a run. Credentials never go in
// it.
func ParseStoreURL(s string) (S3Config, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "s3" || u.Host == "" {
		return S3Config{}, fmt.Errorf("store %q: want s3://BUCKET[/PREFIX] or a directory", redactURL(s))
	}
	if u.User != nil {
		return S3Config{}, fmt.Errorf("store %q: credentials do not go in the store's URL (use AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or the shared credentials file)", redactURL(s))
	}
	cfg := S3Config{Bucket: u.Host, Prefix: strings.Trim(u.Path, "/")}
	if cfg.Prefix != "" {
		cfg.Prefix += "/"
	}
	for k, vs := range u.Query() {
		v := vs[len(vs)-1]
		switch k {
		case "endpoint":
			cfg.Endpoint = v
		case "region":
			cfg.Region = v
		case "path_style":
			cfg.PathStyle = v == "true" || v == "1"
			if v != "true" && v != "false" && v != "1" && v != "0" {
				return S3Config{}, fmt.Errorf("store %q: path_style=%q: want true or false", redactURL(s), v)
			}
		default:
			return S3Config{}, fmt.Errorf("store %q: unknown option %q (want endpoint, region or path_style; credentials come from the AWS environment)", redactURL(s), k)
		}
	}
	return cfg, nil
}

// URL is the config as ParseStoreURL reads it.
func (c S3Config) URL() string {
	q := url.Values{}
	if c.Endpoint != "" {
		q.Set("endpoint", c.Endpoint)
	}
	if c.Region != "" {
		q.Set("region", c.Region)
	}
	if c.PathStyle {
		q.Set("path_style", "true")
	}
	u := url.URL{Scheme: "s3", Host: c.Bucket, Path: "/" + c.Prefix, RawQuery: q.Encode()}
	return u.String()
}

// redactURL drops anything like user:password@ and the query from s, for
// messages: a mistyped URL may hold a secret.
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil {
		u.User, u.RawQuery = nil, ""
		return u.String()
	}
	return "(an unreadable URL)"
}

// NewS3Store connects to the bucket cfg names (it does not yet send a
// request: the first Put, Get or ID does).
func NewS3Store(cfg S3Config, getenv func(string) string) (*S3Store, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("an S3 store needs a bucket")
	}
	ep := cfg.Endpoint
	if ep == "" {
		ep = firstNonEmpty(getenv("AWS_ENDPOINT_URL_S3"), getenv("AWS_ENDPOINT_URL"))
	}
	secure, host := true, "s3.amazonaws.com"
	if ep != "" {
		u, err := url.Parse(ep)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") {
			return nil, fmt.Errorf("S3 endpoint %q: want http://HOST[:PORT] or https://HOST[:PORT]", redactURL(ep))
		}
		secure, host = u.Scheme == "https", u.Host
		cfg.Endpoint = u.Scheme + "://" + u.Host
	}
	if cfg.Region == "" {
		cfg.Region = firstNonEmpty(getenv("AWS_REGION"), getenv("AWS_DEFAULT_REGION"))
	}
	lookup := minio.BucketLookupAuto
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	// The standard AWS chain, read from this process's environment: the
	// environment variables, then the shared credentials file, then the
	// instance's role.
	creds := credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{}, &credentials.FileAWSCredentials{}, &credentials.IAM{},
	})
	c, err := minio.New(host, &minio.Options{Creds: creds, Secure: secure, Region: cfg.Region, BucketLookup: lookup})
	if err != nil {
		return nil, fmt.Errorf("S3 store %s: %w", cfg.where(), err)
	}
	return &S3Store{cfg: cfg, c: c, timeout: s3OpTimeout}, nil
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func (c S3Config) where() string {
	s := "s3://" + c.Bucket + "/" + c.Prefix
	if c.Endpoint != "" {
		s += " at " + c.Endpoint
	}
	return s
}

func (s *S3Store) String() string { return s.cfg.where() }

func (s *S3Store) key(name string) string { return s.cfg.Prefix + path.Join(name[:2], name) }

// Put uploads data. S3 acknowledges a PUT once the object is durable. A
// blob already present is written again: that refreshes its time, so
// gc's grace period counts from this Put.
func (s *S3Store) Put(data []byte) (string, error) {
	name := Sum(data)
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	_, err := s.c.PutObject(ctx, s.cfg.Bucket, s.key(name), bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{ContentType: "application/octet-stream", DisableMultipart: true})
	if err != nil {
		return "", s.failed("writing blob "+name, err)
	}
	return name, nil
}

// Get downloads the blob name and checks its bytes against the name.
func (s *S3Store) Get(name string) ([]byte, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	data, err := s.read(s.key(name))
	if isNoSuchKey(err) {
		return nil, fmt.Errorf("blob %s is not in the store %s (workers and the client must share it)", name, s)
	}
	if err != nil {
		return nil, s.failed("reading blob "+name, err)
	}
	return checked(s, name, data)
}

func (s *S3Store) read(key string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	obj, err := s.c.GetObject(ctx, s.cfg.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	return io.ReadAll(obj)
}

func isNoSuchKey(err error) bool {
	return err != nil && minio.ToErrorResponse(err).Code == minio.NoSuchKey
}

// failed says which store failed and how, naming a missing bucket or
// refused credentials plainly (the credentials themselves never appear),
// or the bound a silent store went past.
func (s *S3Store) failed(what string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errStalled) {
		return fmt.Errorf("%s in %s: no answer within %s (--store-timeout): %w", what, s, s.timeout, err)
	}
	switch minio.ToErrorResponse(err).Code {
	case minio.NoSuchBucket:
		return fmt.Errorf("%s: the bucket %q does not exist at %s: create it first", what, s.cfg.Bucket, firstNonEmpty(s.cfg.Endpoint, "AWS S3"))
	case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch":
		return fmt.Errorf("%s in %s: access refused (%s): check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or the shared credentials file", what, s, minio.ToErrorResponse(err).Code)
	}
	return fmt.Errorf("%s in %s: %w", what, s, err)
}

// ID reads <prefix>runner-store.json, creating it on first use with a
// conditional PUT (If-None-Match: *), so two hosts creating it at once
// agree on one id. On a server without conditional writes the first
// writer's id can be replaced by a racing one's only in the instant both
// create the store; both then read back the same object.
func (s *S3Store) ID() (string, error) {
	key := s.cfg.Prefix + storeIDFile
	data, err := s.read(key)
	if isNoSuchKey(err) {
		fresh, ferr := newStoreIdentity()
		if ferr != nil {
			return "", ferr
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		defer cancel()
		opts := minio.PutObjectOptions{ContentType: "application/json", DisableMultipart: true}
		opts.SetMatchETagExcept("*")
		_, perr := s.c.PutObject(ctx, s.cfg.Bucket, key, bytes.NewReader(fresh), int64(len(fresh)), opts)
		if code := minio.ToErrorResponse(perr).Code; code == "NotImplemented" {
			_, perr = s.c.PutObject(ctx, s.cfg.Bucket, key, bytes.NewReader(fresh), int64(len(fresh)),
				minio.PutObjectOptions{ContentType: "application/json", DisableMultipart: true})
		} else if code == "PreconditionFailed" || code == "ConditionalRequestConflict" {
			perr = nil // another host created it first: read theirs
		}
		if perr != nil {
			return "", s.failed("writing the store identity", perr)
		}
		data, err = s.read(key)
	}
	if err != nil {
		return "", s.failed("reading the store identity", err)
	}
	return parseStoreIdentity(s.String()+storeIDFile, data)
}

// errStalled: a listing's next page did not come within the bound.
var errStalled = errors.New("the listing stalled")

// List calls fn for every blob under the prefix. A listing is many
// requests (a page each): the bound is on each page's wait.
func (s *S3Store) List(ctx context.Context, fn func(BlobInfo) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stall := time.AfterFunc(s.timeout, func() { cancel(errStalled) })
	defer stall.Stop()
	for obj := range s.c.ListObjects(ctx, s.cfg.Bucket, minio.ListObjectsOptions{Prefix: s.cfg.Prefix, Recursive: true}) {
		stall.Reset(s.timeout)
		if obj.Err != nil {
			if errors.Is(context.Cause(ctx), errStalled) {
				return s.failed("listing blobs", errStalled)
			}
			return s.failed("listing blobs", obj.Err)
		}
		rel := strings.TrimPrefix(obj.Key, s.cfg.Prefix)
		dir, name := path.Split(rel)
		if validName(name) != nil || dir != name[:2]+"/" {
			continue // the identity, or not ours
		}
		if err := fn(BlobInfo{Name: name, Size: obj.Size, Modified: obj.LastModified}); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// Delete removes the blob name.
func (s *S3Store) Delete(ctx context.Context, name string) error {
	if err := validName(name); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := s.c.RemoveObject(ctx, s.cfg.Bucket, s.key(name), minio.RemoveObjectOptions{}); err != nil && !isNoSuchKey(err) {
		return s.failed("deleting blob "+name, err)
	}
	return nil
}

// StoreOptions are the flags that choose a store.
type StoreOptions struct {
	Store       string // s3://bucket/prefix, or a directory (--store, --blobs)
	S3Endpoint  string // override the URL's endpoint
	S3Region    string
	S3PathStyle bool
	Timeout     time.Duration // one S3 request's bound (--store-timeout; 0: the default)
}

// OpenStore makes the store o names: an S3 bucket for s3://..., else a
// directory (default DefaultStoreDir). It returns the store and its spec
// with the flags folded in, to hand on (remote.json, a bridge).
func OpenStore(o StoreOptions, getenv func(string) string) (Store, string, error) {
	if strings.HasPrefix(o.Store, "s3:") {
		cfg, err := ParseStoreURL(o.Store)
		if err != nil {
			return nil, "", err
		}
		if o.S3Endpoint != "" {
			cfg.Endpoint = o.S3Endpoint
		}
		if o.S3Region != "" {
			cfg.Region = o.S3Region
		}
		cfg.PathStyle = cfg.PathStyle || o.S3PathStyle
		s, err := NewS3Store(cfg, getenv)
		if err != nil {
			return nil, "", err
		}
		if o.Timeout > 0 {
			s.timeout = o.Timeout
		}
		return s, s.cfg.URL(), nil
	}
	if o.S3Endpoint != "" || o.S3Region != "" || o.S3PathStyle {
		return nil, "", errors.New("--s3-endpoint, --s3-region and --s3-path-style go with --store s3://BUCKET/PREFIX")
	}
	if strings.Contains(o.Store, "://") {
		return nil, "", fmt.Errorf("store %q: want s3://BUCKET[/PREFIX] or a directory", redactURL(o.Store))
	}
	dir := o.Store
	if dir == "" {
		dir = DefaultStoreDir()
	}
	return DirStore{Dir: dir}, dir, nil
}

var _ Sweeper = (*S3Store)(nil)
var _ Sweeper = DirStore{}
