/**
 * WARC 1.1 for the crawler: a per-record-gzip file builder (warc-writer.ts) and the records it writes
 * (warc-record.ts), readers for one record or a whole file (warc-reader.ts) and digests
 * (warc-digest.ts). Pure: no AWS, no network, no I/O.
 * The layout and the choices behind it are described at the top of warc-writer.ts.
 */
export { base32Encode, formatSha1, parseDigest, sha1Digest, verifyDigest } from './warc-digest.ts';
export {
  type HttpMessage,
  iterateWarcFile,
  parseHttpMessage,
  readWarcRecord,
  type WarcFileEntry,
  WarcFormatError,
  type WarcRecord,
} from './warc-reader.ts';
export {
  type PreparedResponse,
  prepareResponse,
  RENAMED_TRANSFER_ENCODING,
  sanitizeName,
  sanitizeValue,
  type WarcResponseInput,
  warcDate,
} from './warc-record.ts';
export {
  REVISIT_PROFILES,
  type RevisitProfile,
  type WarcConversionInput,
  WarcFileBuilder,
  type WarcFileBuilderOptions,
  type WarcMetadataInput,
  type WarcRecordRef,
  type WarcRequestInput,
  type WarcResponseRef,
  type WarcRevisitInput,
} from './warc-writer.ts';
