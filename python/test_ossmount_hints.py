#!/usr/bin/python3
"""Unit tests of python/ossmount_hints.py that need no mount: the socket path rule (CRC-64/XZ
as the daemon computes it), /proc/self/mountinfo parsing (bind mounts of a directory
included), the ioctl numbers, the fallback to the socket, dataset path discovery, and that
HintedSampler yields the wrapped sampler's order (warning, not failing) without a mount.
Run: /usr/bin/python3 python/test_ossmount_hints.py (ctest: python:ossmount_hints).
"""
import errno
import json
import os
import socket
import sys
import unittest
import warnings
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ossmount_hints as h  # noqa: E402


class HintsModuleTest(unittest.TestCase):
    def test_crc64_check_value(self):
        # The CRC-64/XZ check value (src/common/crc64.h).
        self.assertEqual(h._crc64(b"123456789"), 0x995DC9BBDF1939FA)

    def test_socket_path_shape(self):
        with mock.patch.object(h, "_socket_directory", return_value="/run/ossmount"):
            p = h.socket_path_for_mountpoint("/mnt/oss data")
            self.assertEqual(p, "/run/ossmount/mnt-oss-data-%016x.sock" % h._crc64(b"/mnt/oss data"))
            long = h.socket_path_for_mountpoint("/" + "x" * 300)
            self.assertLessEqual(len(long), 107)
            self.assertTrue(long.endswith("%016x.sock" % h._crc64(("/" + "x" * 300).encode())))

    def test_find_mount_picks_the_longest_ossmount_mount(self):
        info = "\n".join([
            "22 1 0:21 / / rw - ext4 /dev/sda1 rw",
            "50 22 0:45 / /mnt/oss rw,nosuid - fuse ossmount:bucket rw,user_id=0",
            "51 50 0:46 / /mnt/oss/inner\\040dir rw - fuse ossmount:other rw",
            "52 22 0:47 / /mnt/other rw - fuse.sshfs host:/ rw",
        ])
        with mock.patch("builtins.open", mock.mock_open(read_data=info)), \
                mock.patch.object(os.path, "realpath", side_effect=lambda p: p):
            self.assertEqual(h.find_mount("/mnt/oss/train/a.jpg"), "/mnt/oss")
            self.assertEqual(h.find_mount("/mnt/oss/inner dir/x"), "/mnt/oss/inner dir")
            self.assertIsNone(h.find_mount("/mnt/other/x"))
            self.assertIsNone(h.find_mount("/mnt/ossx/y"))

    def test_hints_through_a_bind_mount_are_relative_to_what_this_process_sees(self):
        # A container given MOUNT/train as /data: the daemon adds "train" itself, from the
        # directory the request comes through.
        info = "\n".join([
            "22 1 0:21 / / rw - ext4 /dev/sda1 rw",
            "61 22 0:45 /train /data rw,nosuid - fuse.ossmount ossmount:bucket rw",
        ])
        sent = []
        with mock.patch("builtins.open", mock.mock_open(read_data=info)), \
                mock.patch.object(os.path, "realpath", side_effect=lambda p: p), \
                mock.patch.object(h, "_call", side_effect=lambda mp, req: (
                    sent.append((mp, req["paths"])), {"files": len(req["paths"])})[1]):
            self.assertEqual(h.find_mount("/data/n01/a.jpg"), "/data")
            self.assertEqual(h.send_hints(["/data/n01/a.jpg", "/data/n02/b.jpg"]), 2)
        self.assertEqual(sent, [("/data", ["n01/a.jpg", "n02/b.jpg"])])

    def test_hints_name_their_sender_for_a_daemon_that_cannot_see_its_pid(self):
        requests = []
        with mock.patch.object(os.path, "realpath", side_effect=lambda p: p), \
                mock.patch.object(h, "_call", side_effect=lambda mp, req: (
                    requests.append(req), {"files": len(req["paths"])})[1]):
            h.send_hints(["a.jpg"], mountpoint="/mnt/oss")
        self.assertEqual(requests[0]["sender"], "%s:%d" % (socket.gethostname(), os.getpid()))

    def test_a_list_over_one_request_goes_in_pieces_that_extend_it(self):
        paths = ["train/n%02d/%05d.JPEG" % (i % 7, i) for i in range(1000)] + \
            ['train/q"uote/\u00e9\\x.jpg']
        requests = []
        with mock.patch.object(h, "_REQUEST_PATH_BYTES", 2000), \
                mock.patch.object(os.path, "realpath", side_effect=lambda p: p), \
                mock.patch.object(h, "_call", side_effect=lambda mp, req: (
                    requests.append(req), {"files": len(req["paths"])})[1]):
            self.assertEqual(h.send_hints(paths, mountpoint="/mnt/oss"), len(paths))
        self.assertGreater(len(requests), 10)
        self.assertNotIn("append", requests[0])
        self.assertTrue(all(r["append"] is True for r in requests[1:]))
        self.assertEqual([p for r in requests for p in r["paths"]], paths)  # in order, once
        for r in requests:
            self.assertLessEqual(len(json.dumps(r["paths"], separators=(",", ":"))), 2000 + 2)
        # An empty list is one request that clears this process's list.
        requests.clear()
        with mock.patch.object(h, "_call", side_effect=lambda mp, req: (
                requests.append(req), {"files": 0})[1]):
            self.assertEqual(h.send_hints([], mountpoint="/mnt/oss"), 0)
        self.assertEqual([(r["paths"], "append" in r) for r in requests], [([], False)])

    def test_a_list_of_many_short_paths_goes_in_pieces_of_at_most_so_many_paths(self):
        paths = ["%d" % i for i in range(2500)]
        requests = []
        with mock.patch.object(h, "_REQUEST_PATHS", 1000), \
                mock.patch.object(os.path, "realpath", side_effect=lambda p: p), \
                mock.patch.object(h, "_call", side_effect=lambda mp, req: (
                    requests.append(req), {"files": len(req["paths"])})[1]):
            self.assertEqual(h.send_hints(paths, mountpoint="/mnt/oss"), len(paths))
        self.assertEqual([len(r["paths"]) for r in requests], [1000, 1000, 500])
        self.assertEqual([p for r in requests for p in r["paths"]], paths)

    def test_ioctl_numbers_match_the_c_header(self):
        # _IOW('O', 0x61, ControlChunk) and _IOR('O', 0x62, ControlChunk), 16376 bytes.
        self.assertEqual(h._CHUNK_SIZE, 16376)
        self.assertEqual(h._CONTROL_SEND, 0x40000000 | (16376 << 16) | (0x4F << 8) | 0x61)
        self.assertEqual(h._CONTROL_RECEIVE, 0x80000000 | (16376 << 16) | (0x4F << 8) | 0x62)

    def test_call_falls_back_to_the_socket_only_for_a_daemon_without_the_ioctls(self):
        answer = json.dumps({"ok": True, "files": 3}).encode() + b"\n"
        old = OSError(errno.ENOTTY, "Inappropriate ioctl for device")
        with mock.patch.object(h, "_call_through_mount", side_effect=old), \
                mock.patch.object(h, "_call_socket", return_value=answer) as sock:
            self.assertEqual(h._call("/mnt/oss", {"command": "hints"})["files"], 3)
            self.assertEqual(sock.call_count, 1)
        denied = OSError(errno.EACCES, "Permission denied")
        with mock.patch.object(h, "_call_through_mount", side_effect=denied), \
                mock.patch.object(h, "_call_socket", return_value=answer) as sock:
            with self.assertRaisesRegex(RuntimeError, "Permission denied"):
                h._call("/mnt/oss", {"command": "hints"})
            self.assertEqual(sock.call_count, 0)
        refused = json.dumps({"ok": False, "error": "is for the mount's owner"}).encode()
        with mock.patch.object(h, "_call_through_mount", return_value=refused):
            with self.assertRaisesRegex(RuntimeError, "is for the mount's owner"):
                h._call("/mnt/oss", {"command": "warmup-cancel"})

    def test_dataset_paths(self):
        class Folder:
            samples = [("/m/a", 0), ("/m/b", 1)]
        self.assertEqual(h.dataset_paths(Folder()), ["/m/a", "/m/b"])
        with self.assertRaises(TypeError):
            h.dataset_paths(object())

    def test_sampler_without_a_mount_yields_and_warns_once(self):
        s = h.HintedSampler([2, 0, 1], paths=["/nonexistent/a", "/nonexistent/b", "/nonexistent/c"])
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            self.assertEqual(list(s), [2, 0, 1])
            self.assertEqual(list(s), [2, 0, 1])
        self.assertEqual(len(w), 1)
        self.assertEqual(s.sent, 0)
        self.assertEqual(len(s), 3)

    def test_relative_dataset_paths_are_sent_as_the_files_open_would_read(self):
        # ImageFolder("data/train") keeps relative paths; the loader opens them from the
        # current directory, so that is where the hint must point, not the mount's root.
        sent = []
        with mock.patch.object(h, "_call", side_effect=lambda mp, req: (
                sent.append((mp, req["paths"])), {"files": len(req["paths"])})[1]), \
                mock.patch.object(os.path, "realpath", side_effect=lambda p: p), \
                mock.patch.object(os, "getcwd", return_value="/mnt"):
            s = h.HintedSampler([1, 0], paths=["oss/train/a.jpg", "/mnt/oss/train/b.jpg"],
                                mountpoint="/mnt/oss")
            self.assertEqual(list(s), [1, 0])
            self.assertEqual(sent[-1], ("/mnt/oss", ["train/b.jpg", "train/a.jpg"]))
            # send_hints without a mount point: relative to the current directory too.
            with mock.patch.object(h, "find_mount", return_value="/mnt/oss"):
                self.assertEqual(h.send_hints(["oss/train/c.jpg"]), 1)
            self.assertEqual(sent[-1], ("/mnt/oss", ["train/c.jpg"]))
            # With a mount point, a relative path stays relative to it (the documented API).
            h.send_hints(["train/d.jpg"], mountpoint="/mnt/oss")
            self.assertEqual(sent[-1], ("/mnt/oss", ["train/d.jpg"]))


if __name__ == "__main__":
    unittest.main()
