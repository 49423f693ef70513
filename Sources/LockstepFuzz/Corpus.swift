import Foundation

/// Seed corpora and input files.
enum Corpus {
    /// Writes every target's seeds to `directory/TARGET/NAME` and its dictionary to
    /// `directory/TARGET.dict` (if it has one); returns how many seeds.
    static func write(to directory: String) throws -> Int {
        let fm = FileManager.default
        var count = 0
        for target in FuzzTarget.allCases {
            let dir = URL(fileURLWithPath: directory).appendingPathComponent(target.rawValue)
            try fm.createDirectory(at: dir, withIntermediateDirectories: true)
            for (name, bytes) in target.seeds {
                try Data(bytes).write(to: dir.appendingPathComponent(name))
                count += 1
            }
            // libFuzzer refuses an empty dictionary file: none is written for targets without one.
            if !target.dictionary.isEmpty {
                let dict = target.dictionary.map { "\"" + escaped($0) + "\"\n" }.joined()
                try Data(dict.utf8).write(to: URL(fileURLWithPath: directory).appendingPathComponent(target.rawValue + ".dict"))
            }
        }
        return count
    }

    /// The files named, and the files in the directories named (not recursively), sorted.
    static func files(in paths: [String]) throws -> [String] {
        var out: [String] = []
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: path])
            }
            if isDirectory.boolValue {
                let names = try FileManager.default.contentsOfDirectory(atPath: path).filter { !$0.hasPrefix(".") }.sorted()
                out += names.map { path + "/" + $0 }
            } else {
                out.append(path)
            }
        }
        return out
    }

    static func read(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// A libFuzzer dictionary entry: printable ASCII as is, the rest as \xNN.
    static func escaped(_ bytes: [UInt8]) -> String {
        bytes.map { b in
            b >= 0x20 && b < 0x7f && b != UInt8(ascii: "\"") && b != UInt8(ascii: "\\")
                ? String(UnicodeScalar(b)) : "\\x" + hex([b])
        }.joined()
    }
}
