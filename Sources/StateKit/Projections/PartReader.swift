/// Reads the part of a value at a key path, by its offset when the path is a chain of stored
/// struct properties.
///
/// Applying a key path goes through the runtime, which on Linux costs several hundred to a few
/// thousand instructions a read (it instantiates generic metadata for each component). Most
/// projected paths (`\.user.name`) are stored properties, whose offset
/// `MemoryLayout.offset(of:)` gives once; such a read is a load. Other paths (computed
/// properties, subscripts, classes on the way) fall back to the key path.
struct PartReader<Root, Part> {
    let keyPath: KeyPath<Root, Part>
    private let offset: Int?

    init(_ keyPath: KeyPath<Root, Part>) {
        self.keyPath = keyPath
        self.offset = MemoryLayout<Root>.offset(of: keyPath)
    }

    /// The bytes of `Root` that the part occupies, when the path is a chain of stored struct
    /// properties.
    var storedRange: Range<Int>? {
        offset.map { $0..<($0 + MemoryLayout<Part>.size) }
    }

    func read(_ root: Root) -> Part {
        withUnsafePointer(to: root) { read(root, at: $0) }
    }

    /// Reads the part of `root`, whose address is `address`. The key path is applied to the
    /// borrowed value: applied to `address.pointee`, it would copy the value first, retaining
    /// what it holds, once per projection on every change.
    func read(_ root: Root, at address: UnsafePointer<Root>) -> Part {
        guard let offset else { return root[keyPath: keyPath] }
        return UnsafeRawPointer(address).load(fromByteOffset: offset, as: Part.self)
    }
}
