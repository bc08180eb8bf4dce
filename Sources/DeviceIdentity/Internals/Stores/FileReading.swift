#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Reading small files with plain POSIX calls: no symlink games, no Foundation file APIs (one of
/// which leaks on empty files in this toolchain), and a size cap so a huge file is never slurped.
enum FileReading {
    /// An errno from open or read.
    struct Failure: Error {
        let code: Int32
        var text: String { Errno.text(code) }
    }

    /// Reads `fd` to the end, or until more than `limit` bytes were read (the result is then
    /// longer than `limit`, which callers treat as "too big").
    static func readAll(_ fd: Int32, limit: Int) -> Result<Data, Failure> {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 8192)
        while data.count <= limit {
            let count = Glibc.read(fd, &buffer, buffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(Failure(code: errno))
            }
            if count == 0 { break }
            data.append(contentsOf: buffer[0..<count])
        }
        return .success(data)
    }

    /// Opens and reads `path`; nil when it does not exist.
    static func contents(of path: String, limit: Int) -> Result<Data?, Failure> {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        if fd < 0 { return errno == ENOENT ? .success(nil) : .failure(Failure(code: errno)) }
        defer { close(fd) }
        return readAll(fd, limit: limit).map { $0 }
    }
}
