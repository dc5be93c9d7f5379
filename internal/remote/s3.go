package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// S3 is a Store on an S3 bucket or any S3-compatible endpoint, through
// aws-sdk-go-v2. Credentials, region and endpoint come from the standard
// AWS variables and files (AWS_ACCESS_KEY_ID, AWS_PROFILE,
// AWS_ENDPOINT_URL, ...), except the EC2 instance role (see NewS3); with
// an endpoint set, requests are path-style, which S3-compatible stores
// expect.
type S3 struct {
	Bucket, Prefix string // Prefix is "" or ends with "/"
	Endpoint       string // "" for AWS itself
	client         *s3.Client
	// bucketSeen is set once HeadBucket found the bucket (checkBucket).
	bucketSeen atomic.Bool
}

var _ Store = (*S3)(nil)

// ParseURL splits s3://bucket/prefix into bucket and prefix ("" or
// ending with "/").
func ParseURL(raw string) (bucket, prefix string, err error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "s3" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", "", fmt.Errorf("remote: %q is not an s3://bucket/prefix URL", raw)
	}
	prefix = strings.Trim(u.Path, "/")
	if prefix != "" {
		prefix += "/"
	}
	return u.Host, prefix, nil
}

// imdsEnv is the SDK's variable that turns the EC2 instance metadata
// client on and off; unset, NewS3 leaves it off.
const imdsEnv = "AWS_EC2_METADATA_DISABLED"

// NewS3 connects to the bucket of rawURL (s3://bucket/prefix). It makes no
// request: a wrong credential or endpoint shows on the first call. The
// EC2 instance role is used only when AWS_EC2_METADATA_DISABLED=false.
func NewS3(ctx context.Context, rawURL string) (*S3, error) {
	bucket, prefix, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	var opts []func(*config.LoadOptions) error
	if os.Getenv(imdsEnv) == "" {
		// The SDK's default chain ends by asking the EC2 instance
		// metadata endpoint for a role: off an EC2 host that is a stall
		// and a request to whatever answers 169.254.169.254, on someone
		// else's host their instance's credentials. Opt in with
		// AWS_EC2_METADATA_DISABLED=false.
		opts = append(opts, config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("remote: load AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		// S3-compatible stores ignore the region, but signing needs one.
		cfg.Region = "us-east-1"
	}
	endpoint := os.Getenv("AWS_ENDPOINT_URL_S3")
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT_URL")
	}
	return newS3(cfg, bucket, prefix, endpoint), nil
}

// NewS3Static connects to rawURL at endpoint with a fixed key, reading
// nothing from the environment (tests that must not change it).
func NewS3Static(rawURL, endpoint, accessKey, secretKey string) (*S3, error) {
	bucket, prefix, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	cfg := aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider(accessKey, secretKey, ""),
	}
	return newS3(cfg, bucket, prefix, endpoint), nil
}

func newS3(cfg aws.Config, bucket, prefix, endpoint string) *S3 {
	c := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			o.UsePathStyle = true
		}
		// Checksums beyond Content-MD5 are not spoken by every
		// S3-compatible store; compute them only where required.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	return &S3{Bucket: bucket, Prefix: prefix, Endpoint: endpoint, client: c}
}

func (s *S3) String() string { return "s3://" + s.Bucket + "/" + strings.TrimSuffix(s.Prefix, "/") }

func (s *S3) Put(ctx context.Context, key string, body []byte, c Cond) (string, error) {
	if err := s.checkBucket(ctx, "put", key); err != nil {
		return "", err
	}
	in := &s3.PutObjectInput{
		Bucket:        aws.String(s.Bucket),
		Key:           aws.String(s.Prefix + key),
		Body:          bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
	}
	if c.IfAbsent {
		in.IfNoneMatch = aws.String("*")
	}
	if c.IfMatch != "" {
		in.IfMatch = aws.String(quoteETag(c.IfMatch))
	}
	out, err := s.client.PutObject(ctx, in)
	if err != nil {
		return "", s.wrap(ctx, "put", key, err)
	}
	return unquoteETag(aws.ToString(out.ETag)), nil
}

func (s *S3) Get(ctx context.Context, key string, max int64) ([]byte, string, error) {
	if err := s.checkBucket(ctx, "get", key); err != nil {
		return nil, "", err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(s.Prefix + key)})
	if err != nil {
		return nil, "", s.wrap(ctx, "get", key, err)
	}
	defer out.Body.Close()
	if out.ContentLength != nil && *out.ContentLength > max {
		return nil, "", tooLarge(s, key, max)
	}
	// The body is read into a buffer of the promised size at most; one
	// byte more says the store serves more than it promised.
	buf := bytes.NewBuffer(make([]byte, 0, min(max, 64<<20)+1))
	if _, err := buf.ReadFrom(io.LimitReader(out.Body, max+1)); err != nil {
		return nil, "", s.wrap(ctx, "get", key, err)
	}
	b := buf.Bytes()
	if int64(len(b)) > max {
		return nil, "", tooLarge(s, key, max)
	}
	if out.ContentLength != nil && int64(len(b)) != *out.ContentLength {
		return nil, "", fmt.Errorf("remote: get %s/%s: read %d of %d bytes", s, key, len(b), *out.ContentLength)
	}
	return b, unquoteETag(aws.ToString(out.ETag)), nil
}

func (s *S3) List(ctx context.Context, prefix string) ([]Object, error) {
	if err := s.checkBucket(ctx, "list", prefix); err != nil {
		return nil, err
	}
	var out []Object
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: aws.String(s.Bucket), Prefix: aws.String(s.Prefix + prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, s.wrap(ctx, "list", prefix, err)
		}
		for _, o := range page.Contents {
			k := strings.TrimPrefix(aws.ToString(o.Key), s.Prefix)
			out = append(out, Object{Key: k, ETag: unquoteETag(aws.ToString(o.ETag)), Size: aws.ToInt64(o.Size)})
		}
	}
	return out, nil
}

func (s *S3) Delete(ctx context.Context, key string, c Cond) error {
	if err := s.checkBucket(ctx, "delete", key); err != nil {
		return err
	}
	in := &s3.DeleteObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(s.Prefix + key)}
	if c.IfMatch != "" {
		in.IfMatch = aws.String(quoteETag(c.IfMatch))
	}
	if _, err := s.client.DeleteObject(ctx, in); err != nil {
		err = s.wrap(ctx, "delete", key, err)
		if errors.Is(err, ErrNotFound) && c.IfMatch == "" {
			return nil
		}
		return err
	}
	return nil
}

// CreateBucket makes the bucket (tests and first-time setup).
func (s *S3) CreateBucket(ctx context.Context) error {
	_, err := s.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(s.Bucket)})
	var owned interface{ ErrorCode() string }
	if errors.As(err, &owned) && (owned.ErrorCode() == "BucketAlreadyOwnedByYou" || owned.ErrorCode() == "BucketAlreadyExists") {
		return nil
	}
	if err != nil {
		return s.wrap(ctx, "create bucket", "", err)
	}
	return nil
}

// wrap turns an SDK error into "remote: op s3://b/p/key: <what>" matching
// this package's sentinels, with a hint where the user can act.
func (s *S3) wrap(ctx context.Context, op, key string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	where := s.String() + "/" + key
	var api smithy.APIError
	if errors.As(err, &api) {
		code := api.ErrorCode()
		status := 0
		var re *awshttp.ResponseError
		if errors.As(err, &re) {
			status = re.HTTPStatusCode()
		}
		switch {
		case code == "PreconditionFailed" || status == 412:
			return fmt.Errorf("remote: %s %s: %w", op, where, ErrExists)
		case code == "NoSuchKey" || code == "NotFound" || (status == 404 && code != "NoSuchBucket"):
			return fmt.Errorf("remote: %s %s: %w", op, where, ErrNotFound)
		case code == "NoSuchBucket":
			return s.noBucket(op, key, api.ErrorMessage())
		case code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" || code == "AccessDenied" || code == "ExpiredToken" || status == 403:
			return fmt.Errorf("remote: %s %s: %w (%s: %s); check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or AWS_PROFILE", op, where, ErrAuth, code, api.ErrorMessage())
		}
		return fmt.Errorf("remote: %s %s: %s: %s", op, where, code, api.ErrorMessage())
	}
	var nerr net.Error
	var oerr *net.OpError
	var dnsErr *net.DNSError
	if errors.As(err, &oerr) || errors.As(err, &dnsErr) || (errors.As(err, &nerr) && nerr.Timeout()) {
		ep := s.Endpoint
		if ep == "" {
			ep = "the AWS S3 endpoint"
		}
		return fmt.Errorf("remote: %s %s: %w: cannot reach %s (%v); check AWS_ENDPOINT_URL and the network", op, where, ErrUnreachable, ep, rootCause(err))
	}
	if strings.Contains(err.Error(), "failed to retrieve credentials") || strings.Contains(err.Error(), "no EC2 IMDS role found") {
		hint := ""
		if !strings.EqualFold(os.Getenv(imdsEnv), "false") {
			hint = ", or AWS_EC2_METADATA_DISABLED=false to use the EC2 instance role"
		}
		return fmt.Errorf("remote: %s %s: %w: no AWS credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE%s", op, where, ErrAuth, hint)
	}
	return fmt.Errorf("remote: %s %s: %w", op, where, err)
}

// checkBucket fails with ErrNoBucket, before operation op on key is
// tried, when the store says the bucket does not exist (HeadBucket answers
// 404), and then asks again at the next operation; once the bucket was
// found it asks no more. Stores do not say it alike when the operation
// itself meets a missing bucket: SeaweedFS lists it as empty, answers a
// write with an internal error (and leaves the bucket half made), others
// refuse the write as access denied, which reads as a credentials problem.
// Any other answer to HeadBucket, a refusal or an unreachable endpoint,
// is left to the operation to report. Concurrent calls are allowed.
func (s *S3) checkBucket(ctx context.Context, op, key string) error {
	if s.bucketSeen.Load() {
		return nil
	}
	_, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(s.Bucket)})
	if err == nil {
		s.bucketSeen.Store(true)
		return nil
	}
	var re *awshttp.ResponseError
	var api smithy.APIError
	if errors.As(err, &re) && re.HTTPStatusCode() == 404 || errors.As(err, &api) && api.ErrorCode() == "NoSuchBucket" {
		return s.noBucket(op, key, "")
	}
	return nil
}

// noBucket is the error of an operation on a bucket that does not exist:
// what to create, or which URL and endpoint to check.
func (s *S3) noBucket(op, key, detail string) error {
	where := s.String() + "/" + key
	if detail != "" {
		detail = " (" + detail + ")"
	}
	create := "aws s3 mb s3://" + s.Bucket
	on := "AWS S3"
	if s.Endpoint != "" {
		create += ", with --endpoint-url " + s.Endpoint
		on = s.Endpoint
	}
	return fmt.Errorf("remote: %s %s: %w: bucket %q does not exist on %s%s; create it (%s, or the store's console) or fix the bucket in --remote / %s (and the endpoint in AWS_ENDPOINT_URL)",
		op, where, ErrNoBucket, s.Bucket, on, detail, create, Env)
}

func rootCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

func quoteETag(e string) string {
	if strings.HasPrefix(e, `"`) {
		return e
	}
	return `"` + e + `"`
}

func unquoteETag(e string) string { return strings.Trim(e, `"`) }

// tooLarge is the error of a Get whose object has more than max bytes.
func tooLarge(st Store, key string, max int64) error {
	return fmt.Errorf("remote: get %s/%s: %w: it has more than the %d bytes it was listed at (or than this agentctl reads); the bucket's object changed since it was listed, or the store cannot be trusted", st, key, ErrTooLarge, max)
}
