import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The journal of one key of a ``FileStateStorage`` shared across processes: every value the key's
/// writers stored, in order, so that another process delivers each change, not only the newest.
///
/// A hidden file beside the key's (`.<file>.journal`): a header (`SKJ1` and the sequence number of
/// its first entry), then entries, each its length, its sequence number, a checksum of both and the
/// bytes, and the bytes (the value as stored). Writers append holding the key's ``SharedKeyLock``,
/// after the key's file is replaced, and keep the journal's end (the last sequence number and the
/// length of what is whole) in the lock file, so a tail that a killed writer tore, or that anything
/// else wrote, is cut off by the next append. Past twice ``backlog`` entries, the journal is
/// rewritten keeping the last ``backlog`` (a temporary file renamed into place).
///
/// Readers read holding the key too, from where they stopped (``Position``); a reader whose next
/// entry was compacted away learns how many it missed.
///
/// A writer keeps the journal open between appends (closing a file written to wakes every
/// directory watcher, one more wake-up per write), and opens it again once another process
/// replaced it.
///
/// - Note: `SharedKeyJournal` is used holding the key's ``SharedKeyLock``, which guards it.
final class SharedKeyJournal: @unchecked Sendable {
    /// How many changes of a key a reader may be behind and still get each of them.
    static let backlog: UInt64 = 1_000

    /// One stored value, with its sequence number.
    struct Entry {
        let sequence: UInt64
        let bytes: Data
    }

    /// Where a reader stopped: the journal it read (by its first sequence number), the offset
    /// after the last whole entry it read, and that entry's sequence number.
    struct Position: Equatable {
        var firstSequence: UInt64
        var offset: UInt64
        var lastSequence: UInt64
    }

    /// What a read found after a position.
    struct Reading {
        /// The entries after the position, in order.
        var entries: [Entry] = []
        /// How many entries before the first of `entries` were compacted away unread.
        var missed: UInt64 = 0
        /// The offset of a damaged tail (a torn or foreign write), which was ignored.
        var damagedAt: UInt64?
    }

    /// The journal file.
    let path: String
    /// The journal, open for appending; -1 until the first append.
    private var descriptor: Int32 = -1

    private static var headerSize: UInt64 { 12 }
    private static var entryHeaderSize: Int { 20 }
    private static let magic = Data("SKJ1".utf8)

    /// The journal of the key whose file is at `filePath`.
    init(forFileAt filePath: String) {
        let directory = (filePath as NSString).deletingLastPathComponent
        path = directory + "/." + (filePath as NSString).lastPathComponent + ".journal"
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// The journal open for appending (the one kept, unless another file is at `path` now), and
    /// its size.
    private func openForAppending() throws -> (descriptor: Int32, size: UInt64) {
        var status = stat()
        // A journal another process replaced (compacted) or removed has no link left.
        if descriptor >= 0, fstat(descriptor, &status) == 0, status.st_nlink > 0 {
            return (descriptor, UInt64(status.st_size))
        }
        if descriptor >= 0 { close(descriptor) }
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0, fstat(descriptor, &status) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        return (descriptor, UInt64(status.st_size))
    }

    /// The end of the journal, where a reader that has read everything stands. Called holding the
    /// key, whose lock is `lock`.
    func end(holding lock: SharedKeyLock) -> Position {
        let (lastSequence, length) = lock.journalEnd
        let firstSequence = readFirstSequence() ?? lastSequence &+ 1
        return Position(firstSequence: firstSequence, offset: length, lastSequence: lastSequence)
    }

    /// Appends `bytes` as the key's next entry, cutting off a damaged tail first, and compacts the
    /// journal when it passed twice ``backlog`` entries. Called holding the key, whose lock is
    /// `lock`.
    ///
    /// - Returns: The journal's new end.
    @discardableResult
    func append(_ bytes: Data, holding lock: SharedKeyLock) throws -> Position {
        var (lastSequence, length) = lock.journalEnd
        let (descriptor, size) = try openForAppending()
        var firstSequence = Self.readFirstSequence(descriptor)
        if firstSequence == nil || length < Self.headerSize || size < length {
            // No journal, or not the one the lock file describes: start one after the last entry.
            firstSequence = lastSequence &+ 1
            try Self.write(Self.header(firstSequence: lastSequence &+ 1), to: descriptor, at: 0)
            length = Self.headerSize
        }
        if size > length { ftruncate(descriptor, off_t(length)) }
        lastSequence &+= 1
        let entry = Self.encode(Entry(sequence: lastSequence, bytes: bytes))
        try Self.write(entry, to: descriptor, at: length)
        length += UInt64(entry.count)
        var first = firstSequence ?? lastSequence
        if lastSequence - first + 1 > 2 * Self.backlog {
            first = lastSequence - Self.backlog + 1
            length = try compact(descriptor, length: length, keepingFrom: first)
        }
        lock.setJournalEnd(lastSequence: lastSequence, length: length)
        return Position(firstSequence: first, offset: length, lastSequence: lastSequence)
    }

    /// Rewrites the journal with its entries from `firstKept` on; returns its new length.
    private func compact(_ descriptor: Int32, length: UInt64, keepingFrom firstKept: UInt64) throws -> UInt64 {
        let all = Self.read(descriptor, from: Self.headerSize, to: length)
        var kept = Self.header(firstSequence: firstKept)
        var offset = 0
        while let (entry, size) = Self.decode(all, at: offset) {
            let start = all.startIndex + offset
            if entry.sequence >= firstKept { kept.append(all[start..<start + size]) }
            offset += size
        }
        let temporary = path + ".tmp-\(getpid())-\(UUID().uuidString)"
        let output = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard output >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        do {
            try Self.write(kept, to: output, at: 0)
            close(output)
        } catch {
            close(output)
            unlink(temporary)
            throw error
        }
        guard rename(temporary, path) == 0 else {
            let error = POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            unlink(temporary)
            throw error
        }
        _ = try openForAppending()
        return UInt64(kept.count)
    }

    /// The entries after `position`, which moves past them (and past entries it already read).
    /// Called holding the key.
    func read(after position: inout Position) -> Reading {
        var reading = Reading()
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return reading }
        defer { close(descriptor) }
        guard let firstSequence = Self.readFirstSequence(descriptor) else { return reading }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return reading }
        if firstSequence != position.firstSequence || position.offset < Self.headerSize {
            // Compacted, or started again, since: read it from its first entry.
            position.firstSequence = firstSequence
            position.offset = Self.headerSize
        }
        let start = position.offset
        let data = Self.read(descriptor, from: start, to: UInt64(status.st_size))
        var offset = 0
        while offset < data.count {
            guard let (entry, size) = Self.decode(data, at: offset) else {
                reading.damagedAt = start + UInt64(offset)
                break
            }
            offset += size
            guard entry.sequence > position.lastSequence else { continue }
            if entry.sequence != position.lastSequence &+ 1 {
                reading.missed += entry.sequence - position.lastSequence - 1
            }
            position.lastSequence = entry.sequence
            reading.entries.append(entry)
        }
        position.offset = start + UInt64(offset)
        return reading
    }

    private func readFirstSequence() -> UInt64? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        return Self.readFirstSequence(descriptor)
    }

    private static func readFirstSequence(_ descriptor: Int32) -> UInt64? {
        let header = read(descriptor, from: 0, to: headerSize)
        guard header.count == Int(headerSize), header.prefix(4) == magic else { return nil }
        return header.dropFirst(4).withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
    }

    private static func header(firstSequence: UInt64) -> Data {
        var header = magic
        withUnsafeBytes(of: firstSequence.littleEndian) { header.append(contentsOf: $0) }
        return header
    }

    private static func encode(_ entry: Entry) -> Data {
        var data = Data(capacity: entryHeaderSize + entry.bytes.count)
        withUnsafeBytes(of: UInt32(entry.bytes.count).littleEndian) { data.append(contentsOf: $0) }
        withUnsafeBytes(of: entry.sequence.littleEndian) { data.append(contentsOf: $0) }
        withUnsafeBytes(of: checksum(sequence: entry.sequence, bytes: entry.bytes).littleEndian) {
            data.append(contentsOf: $0)
        }
        data.append(entry.bytes)
        return data
    }

    /// The whole entry at `offset` in `data` and its size, or `nil` if what is there is torn or
    /// damaged.
    private static func decode(_ data: Data, at offset: Int) -> (Entry, Int)? {
        guard data.count - offset >= entryHeaderSize else { return nil }
        let base = data.startIndex + offset
        let (count, sequence, sum) = data[base..<base + entryHeaderSize].withUnsafeBytes { raw in
            (
                Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt32.self))),
                UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 4, as: UInt64.self)),
                UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 12, as: UInt64.self))
            )
        }
        guard data.count - offset - entryHeaderSize >= count else { return nil }
        let bytes = Data(data[base + entryHeaderSize..<base + entryHeaderSize + count])
        guard checksum(sequence: sequence, bytes: bytes) == sum else { return nil }
        return (Entry(sequence: sequence, bytes: bytes), entryHeaderSize + count)
    }

    /// FNV-1a over the sequence number and the bytes.
    private static func checksum(sequence: UInt64, bytes: Data) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func add(_ byte: UInt8) {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        withUnsafeBytes(of: sequence.littleEndian) { for byte in $0 { add(byte) } }
        for byte in bytes { add(byte) }
        return hash
    }

    private static func read(_ descriptor: Int32, from start: UInt64, to end: UInt64) -> Data {
        guard end > start else { return Data() }
        var data = Data(count: Int(end - start))
        let count = data.withUnsafeMutableBytes { buffer in
            var done = 0
            while done < buffer.count {
                let read = pread(
                    descriptor, buffer.baseAddress! + done, buffer.count - done, off_t(start) + off_t(done))
                if read < 0 && errno == EINTR { continue }
                if read <= 0 { break }
                done += read
            }
            return done
        }
        return data.prefix(count)
    }

    private static func write(_ data: Data, to descriptor: Int32, at offset: UInt64) throws {
        try data.withUnsafeBytes { buffer in
            var done = 0
            while done < buffer.count {
                let written = pwrite(
                    descriptor, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
                if written < 0 {
                    if errno == EINTR { continue }
                    throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
                }
                done += written
            }
        }
    }
}
