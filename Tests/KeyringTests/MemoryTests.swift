// Memory over many real keyring operations. libsecret 0.20.5 itself leaks each GetSecrets reply
// (about 5 KiB for a 4 KiB secret; valgrind shows the same for secret_password_lookupv_sync), so
// reads are measured side by side with libsecret's own lookup: ours must not add to that.
// Writes and searches leak nothing (valgrind: 0 bytes definitely lost over 200 of each).
import CLibSecret
import Foundation
import Keyring
import Testing

@Suite("Memory over thousands of operations")
struct MemoryTests {
    /// Resident set size in KiB, from /proc/self/statm.
    static func residentKiB() throws -> Int {
        let fields = try String(contentsOfFile: "/proc/self/statm", encoding: .utf8).split(separator: " ")
        return (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024
    }

    /// libsecret's own lookup, made directly: the reference for what a read costs in memory.
    static func referenceLookup(service: String) {
        let table = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free)!
        g_hash_table_insert(table, g_strdup("service"), g_strdup(service))
        var error: UnsafeMutablePointer<GError>? = nil
        let password = secret_password_lookupv_sync(nil, table, nil, &error)
        if let error { g_error_free(error) }
        secret_password_free(password)
        g_hash_table_unref(table)
    }

    /// Bytes malloc holds for the process now (the shim's mallinfo2): exact where RSS moves with page reuse.
    static func heapBytes() -> Int { Int(kr_heap_bytes_in_use()) }

    @Test("1000 SecretStore reads grow the heap no more than 1000 plain libsecret lookups")
    func readsSideBySide() throws {
        try requireTestKeyring()
        let store = try SecretStore(identifier: uniqueID("memory"))
        try store.setData(Data(repeating: 0x61, count: 4096), forKey: .valueData)
        for _ in 0..<50 {
            _ = try store.data(forKey: .valueData)
            Self.referenceLookup(service: store.identifier)
        }
        // Heap bytes in use, not RSS: two workloads' RSS growth flips with the allocator's page reuse.
        let start = Self.heapBytes()
        for _ in 0..<1000 { _ = try store.data(forKey: .valueData) }
        let afterOurs = Self.heapBytes()
        for _ in 0..<1000 { Self.referenceLookup(service: store.identifier) }
        let afterReference = Self.heapBytes()
        try store.reset()
        let ours = (afterOurs - start) / 1024
        let reference = (afterReference - afterOurs) / 1024
        print("memory: 1000 reads grew the heap by \(ours) KiB, 1000 libsecret lookups by \(reference) KiB")
        #expect(start > 0, "mallinfo2 answers (glibc 2.33 or later)")
        #expect(ours <= reference + reference / 2 + 1024, "ours grew \(ours) KiB, libsecret's lookup \(reference) KiB")
    }
}
