import Foundation
import StateKit
import Testing

@Suite struct FileStateStorageTests {
    @Test func savedBytesLoadBackAndMissingKeyLoadsNil() throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let storage = FileStateStorage.file(directory.url)
        #expect(try storage.load(forKey: "absent") == nil)
        try storage.save(Data("42".utf8), forKey: "answer")
        try storage.save(Data("43".utf8), forKey: "answer")
        #expect(try storage.load(forKey: "answer") == Data("43".utf8))
        #expect(directory.fileNames == ["answer.json"])
    }

    @Test func keysWithSeparatorsMapToDistinctVisibleFiles() throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let storage = FileStateStorage.file(directory.url)
        let keys = ["a/b", "a%2Fb", ".hidden", "..", "Module/File.swift:12", "a b", "é"]
        for (index, key) in keys.enumerated() { try storage.save(Data("\(index)".utf8), forKey: key) }
        for (index, key) in keys.enumerated() { #expect(try storage.load(forKey: key) == Data("\(index)".utf8)) }
        #expect(directory.fileNames.count == keys.count)
        #expect(directory.fileNames.allSatisfy { !$0.hasPrefix(".") && !$0.contains("/") })
    }

    @Test func saveLeavesNoTemporaryFileBehind() throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let storage = FileStateStorage.file(directory.url)
        for index in 0..<20 { try storage.save(Data("\(index)".utf8), forKey: "k") }
        #expect(directory.fileNames == ["k.json"])
    }

    @Test func moveValueRenamesAndRemoveForgets() throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let storage = FileStateStorage.file(directory.url)
        try storage.save(Data("x".utf8), forKey: "k")
        try storage.moveValue(forKey: "k", toKey: "k.aside")
        #expect(try storage.load(forKey: "k") == nil)
        #expect(try storage.load(forKey: "k.aside") == Data("x".utf8))
        try storage.moveValue(forKey: "absent", toKey: "elsewhere")
        try storage.remove(forKey: "k.aside")
        try storage.remove(forKey: "k.aside")
        #expect(directory.fileNames.isEmpty)
    }

    @Test func inMemoryStoragesAreSeparate() throws {
        let first = InMemoryStateStorage.inMemory
        let second = InMemoryStateStorage.inMemory
        try first.save(Data("1".utf8), forKey: "k")
        #expect(try second.load(forKey: "k") == nil)
        #expect(first.location != second.location)
        try first.moveValue(forKey: "k", toKey: "j")
        #expect(first.keys == ["j"])
    }
}
