"""An object replaced on the server while a reader has it open.

docs/SEMANTICS.md "Faults and recovery". Objects live on the server's disk; a replacement
is a new file renamed over the old one (a new etag), followed by a listing rescan.
- Small file (fetched whole): a reader that already read gets only the old bytes to the end;
  a reader that opened before the change but had not read yet gets ESTALE (If-Match fails),
  never the new bytes through the old handle.
- Large file (ranged reads, If-Match on every part): the reader gets old bytes up to some
  point and then an error (ESTALE or EIO), never a byte of the new version.
- New opens see the new object once --metadata-ttl (1 s here) has passed; before that a new
  open reads the old object or gets ESTALE; after it, the whole new object, never its bytes
  cut at an old size the kernel still holds (KernelAttributesTest makes the kernel hold it).
- Over s3rver, which ignores If-Match: a small file opened before it was replaced gets ESTALE
  on its first read whether the object grew, shrank or kept its size (the reply is checked
  against the size and etag pinned at open), never EIO and never the new bytes.
"""
import errno
import os
import tempfile
import time
import unittest
import urllib.request

import harness

TTL_S = 1
SMALL_SIZE = 200_000
LARGE_SIZE = 24 << 20
CHUNK = 1 << 20


def pattern(tag, size):
    # Every 16-byte cell names its version and its offset, so a mixed read is evident.
    cells = []
    for off in range(0, size, 16):
        cells.append(("%s%014x" % (tag, off)).encode()[:16])
    return b"".join(cells)[:size]


class ObjectsOnDisk:
    """Objects in cls.bucket of the project's server, replaced as the server sees them."""

    @classmethod
    def write(cls, name, data):
        tmp = os.path.join(cls.bucket, ".tmp-" + name.replace("/", "-"))
        with open(tmp, "wb") as f:
            f.write(data)
        os.rename(tmp, os.path.join(cls.bucket, name))  # new inode: a new etag

    def replace(self, name, data):
        self.write(name, data)
        req = urllib.request.Request(self.server.endpoint + "/_ossmount/rescan", method="POST")
        urllib.request.urlopen(req, timeout=10).read()


class ReplaceTest(unittest.TestCase, ObjectsOnDisk):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="replace-data-")
        cls.bucket = os.path.join(cls.root, "bucket")
        os.makedirs(cls.bucket)
        for name, size in (("small-1", SMALL_SIZE), ("small-2", SMALL_SIZE),
                           ("large-1", LARGE_SIZE), ("large-2", LARGE_SIZE)):
            cls.write(name, pattern("O", size))
        cls.server = harness.TestServer(cls.root, bucket="bucket")
        cls.mount = harness.Mount(cls.server, args=[
            "--metadata-ttl", str(TTL_S), "--small-file-threshold", "1MiB",
            "--prefetch-unit", "1MiB", "--max-readahead", "4MiB"])

    @classmethod
    def tearDownClass(cls):
        cls.mount.close()
        cls.server.stop()

    def assert_new_opens_see_new(self, name, new):
        def sees_new():
            # Within the TTL a new open still uses the old attributes: its read gets ESTALE
            # (If-Match fails, the entry is dropped) or, never, a mix.
            try:
                with open(self.mount.path(name), "rb") as f:
                    got = f.read()
            except OSError as e:
                self.assertEqual(e.errno, errno.ESTALE)
                return False
            # One whole version: never a mix, and never the new bytes cut at the old size
            # the kernel may still hold (the daemon tells it to drop that size at the open;
            # KernelAttributesTest below catches the window for certain).
            one_version = got in (new, pattern("O", SMALL_SIZE), pattern("O", LARGE_SIZE))
            if not one_version:
                first = next((i for i in range(min(len(got), len(new))) if got[i] != new[i]),
                             min(len(got), len(new)))
                self.fail("%s: %d bytes mixing versions; first byte not of the new one at %d: "
                          "%r" % (name, len(got), first, got[first - first % 16:][:48]))
            return got == new
        harness.wait_for(sees_new, 30, "a new open of %s to see the new object" % name, 0.2)

    def test_small_file_read_before_the_change_stays_old(self):
        old, new = pattern("O", SMALL_SIZE), pattern("N", SMALL_SIZE + 7)
        with open(self.mount.path("small-1"), "rb", buffering=0) as f:
            got = f.read(4096)
            self.replace("small-1", new)
            try:
                got += f.read()
                self.assertEqual(got, old)  # only old bytes, to the end
            except OSError as e:
                self.assertIn(e.errno, (errno.ESTALE, errno.EIO))
                self.assertEqual(got, old[:len(got)])
        self.assert_new_opens_see_new("small-1", new)

    def test_small_file_opened_before_the_change_never_gives_new_bytes(self):
        old, new = pattern("O", SMALL_SIZE), pattern("N", SMALL_SIZE)  # same size
        with open(self.mount.path("small-2"), "rb", buffering=0) as f:
            self.replace("small-2", new)
            try:
                got = f.read()
                self.assertEqual(got, old)  # possible only if fetched before the rename
            except OSError as e:
                self.assertEqual(e.errno, errno.ESTALE)
        self.assert_new_opens_see_new("small-2", new)

    def check_large(self, name, new):
        old = pattern("O", LARGE_SIZE)
        got = b""
        error = None
        with open(self.mount.path(name), "rb", buffering=0) as f:
            got += f.read(CHUNK)
            self.replace(name, new)
            while True:
                try:
                    b = f.read(CHUNK)
                except OSError as e:
                    error = e
                    break
                if not b:
                    break
                got += b
            # Whatever came before the error is the old version, byte for byte.
            self.assertEqual(got, old[:len(got)])
            if error is None:
                self.assertEqual(len(got), LARGE_SIZE)
            else:
                self.assertIn(error.errno, (errno.ESTALE, errno.EIO))
                # Further reads through the same handle still never give new bytes.
                for off in (0, len(got), LARGE_SIZE - CHUNK):
                    try:
                        b = os.pread(f.fileno(), CHUNK, off)
                        self.assertEqual(b, old[off:off + len(b)])
                    except OSError as e:
                        self.assertIn(e.errno, (errno.ESTALE, errno.EIO))
        print("\n%s: %d old bytes read, then %s" %
              (name, len(got), "an error %s" % errno.errorcode[error.errno] if error
               else "the end (all old)"))
        self.assert_new_opens_see_new(name, new)

    def test_large_file_same_size(self):
        self.check_large("large-1", pattern("N", LARGE_SIZE))

    def test_large_file_new_size(self):
        self.check_large("large-2", pattern("N", LARGE_SIZE // 2))



class ReplaceOverS3rverTest(unittest.TestCase):
    """The same promise from a server that ignores If-Match (s3rver answers 200 regardless)."""

    @classmethod
    def setUpClass(cls):
        cls.server = harness.S3rver(bucket="replace")
        cls.tmp = tempfile.mkdtemp(prefix="replace-s3rver-")
        for name in ("grows", "shrinks", "same-size"):
            cls.put(name, pattern("O", SMALL_SIZE))
        cls.mount = harness.Mount(cls.server, args=[
            "--metadata-ttl", str(TTL_S), "--small-file-threshold", "1MiB"])

    @classmethod
    def tearDownClass(cls):
        cls.mount.close()
        cls.server.stop()

    @classmethod
    def put(cls, name, data):
        path = os.path.join(cls.tmp, name)
        with open(path, "wb") as f:
            f.write(data)
        harness.client(cls.server, "put", name, path)

    def check_estale(self, name, new):
        with open(self.mount.path(name), "rb", buffering=0) as f:
            # Opened (size and etag pinned), not read yet: the GET happens at the first read.
            self.put(name, new)
            with self.assertRaises(OSError) as raised:
                got = f.read()
                print("\n%s: read %d bytes, old version: %s" %
                      (name, len(got), got == pattern("O", SMALL_SIZE)))
            self.assertEqual(raised.exception.errno, errno.ESTALE,
                             "%s: %s" % (name, os.strerror(raised.exception.errno)))

    def test_grown_object_is_estale(self):
        # The reply overflows the buffer sized for the pinned object.
        self.check_estale("grows", pattern("N", SMALL_SIZE + 7))

    def test_shrunk_object_is_estale(self):
        self.check_estale("shrinks", pattern("N", SMALL_SIZE - 7))

    def test_same_size_object_is_estale(self):
        # Only the etag tells.
        self.check_estale("same-size", pattern("N", SMALL_SIZE))

class KernelAttributesTest(unittest.TestCase, ObjectsOnDisk):
    """An object that grew on the server while the kernel still holds its old size.

    The kernel keeps a file's attributes for the attribute timeout (--metadata-ttl) from
    when it got them, and the daemon keeps its metadata for the same time from when it
    listed. A listing served from the daemon's still-fresh cache hands the kernel the old
    size again, for a whole new timeout; once the daemon's metadata expires, an open finds
    the new object while the kernel still holds the old size, which would cut the new bytes
    at it. The daemon tells the kernel to drop those attributes before it answers the open.
    """
    TTL_S = 4
    ATTEMPTS = 3

    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="replace-attrs-")
        cls.bucket = os.path.join(cls.root, "bucket")
        os.makedirs(os.path.join(cls.bucket, "d"))
        for i in range(cls.ATTEMPTS):
            cls.write("d/grows-%d" % i, pattern("O", SMALL_SIZE))
        cls.server = harness.TestServer(cls.root, bucket="bucket")
        cls.mount = harness.Mount(cls.server, args=[
            "--metadata-ttl", str(cls.TTL_S), "--small-file-threshold", "1MiB"])

    @classmethod
    def tearDownClass(cls):
        cls.mount.close()
        cls.server.stop()

    def test_grown_object_is_read_whole_while_the_kernel_held_its_old_size(self):
        new = pattern("N", 3 * SMALL_SIZE)
        # Timing decides whether an attempt reaches the window (the daemon's metadata
        # expired, the kernel's attributes not); one that misses it proves nothing, so a
        # loaded machine gets another file.
        for i in range(self.ATTEMPTS):
            name = "d/grows-%d" % i
            path = self.mount.path(name)
            listed = time.monotonic()
            self.assertIn("grows-%d" % i, os.listdir(self.mount.path("d")))
            self.replace(name, new)
            time.sleep(self.TTL_S * 0.6)
            relisted = time.monotonic()
            os.listdir(self.mount.path("d"))  # from the daemon's fresh cache: the old size
            time.sleep(max(0.0, listed + self.TTL_S + 0.5 - time.monotonic()))
            kernel_size = os.stat(path).st_size
            with open(path, "rb") as f:
                got = f.read()
                fstat_size = os.fstat(f.fileno()).st_size
            opened = time.monotonic()
            in_window = relisted - listed < self.TTL_S - 0.2 and \
                opened - relisted < self.TTL_S - 0.2
            print("\n%s: attempt %d, kernel size before the open %d, read %d bytes (new %d), "
                  "in the window: %s" % (name, i, kernel_size, len(got), len(new), in_window))
            if not in_window or kernel_size != len(pattern("O", SMALL_SIZE)):
                continue  # the kernel did not hold the old size: nothing was tested
            self.assertEqual(fstat_size, len(new))
            self.assertEqual(len(got), len(new), "the new bytes were cut at the old size")
            self.assertEqual(got, new)
            return
        self.fail("no attempt reached the window in which the kernel held the old size")


if __name__ == "__main__":
    harness.main()
