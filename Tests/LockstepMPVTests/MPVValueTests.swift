import Foundation
import LockstepMPV
import Testing

@Suite("mpv JSON values")
struct MPVValueTests {
    private func decode(_ json: String) throws -> MPVValue {
        try JSONDecoder().decode(MPVValue.self, from: Data(json.utf8))
    }

    @Test("a reply line decodes with every JSON type mpv uses")
    func replyLine() throws {
        let v = try decode(#"{"data":{"pos":10.000000,"n":3,"on":true,"name":"a\/b","list":[1,"x",null]},"request_id":7,"error":"success"}"#)
        #expect(v["request_id"]?.int == 7)
        #expect(v["error"]?.string == "success")
        let data = try #require(v["data"])
        #expect(data["pos"]?.double == 10)
        #expect(data["n"]?.int == 3)
        #expect(data["n"]?.double == 3)
        #expect(data["on"]?.bool == true)
        #expect(data["name"]?.string == "a/b")
        #expect(data["list"] == [1, "x", nil])
    }

    @Test("a fractional number is a double, not an int")
    func fractional() throws {
        let v = try decode("1.073094")
        #expect(v.double == 1.073094)
        #expect(v.int == nil)
        #expect(try decode("true").double == nil)
    }

    @Test("commands encode as mpv expects, slashes unescaped")
    func encode() throws {
        let e = JSONEncoder()
        e.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        let command: [MPVValue] = ["loadfile", "/tmp/a b.mkv", "replace"]
        #expect(String(decoding: try e.encode(command), as: UTF8.self) == #"["loadfile","/tmp/a b.mkv","replace"]"#)
        let mixed: MPVValue = ["seek", 10.5, "absolute+exact", false, 3]
        #expect(String(decoding: try e.encode(mixed), as: UTF8.self) == #"["seek",10.5,"absolute+exact",false,3]"#)
    }
}
