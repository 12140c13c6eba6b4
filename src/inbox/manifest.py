# Change sets, in-box half (scheduler/changes/change_set.h): defines _lsb_manifest, op "M" of the
# session driver, inside the box: walks the roots (no link followed) and returns one record per entry.
# (This header, the leading comment lines, is not embedded: cmake/embed_sources.cmake.)

def _lsb_manifest(roots, limits):
    import hashlib, os, stat
    max_entries, max_file, max_total, skip = limits.decode().split(' ', 3)
    max_entries, max_file, max_total = int(max_entries), int(max_file), int(max_total)
    out, entries, total = bytearray(), 0, 0

    def record(kind, path, head, payload):
        p = path.encode('utf-8', 'surrogateescape')
        data = head.encode() + b'\n' + payload
        out.extend(b'%s %d %d\n' % (kind, len(p), len(data)))
        out.extend(p)
        out.extend(data)

    for root in roots.decode('utf-8', 'surrogateescape').split('\n'):
        if not root or os.path.realpath(root) != root or not os.path.isdir(root):
            continue
        stack = [root]
        while stack:
            d = stack.pop()
            try:
                names = sorted(os.listdir(d))
            except OSError:
                continue
            for n in names:
                path = (d.rstrip('/') + '/' + n)
                if d == root and n.startswith(skip):
                    continue  # the rich outputs' stage, written by the host's prelude
                entries += 1
                if entries > max_entries:
                    raise OverflowError('more than %d files and directories under %s' % (max_entries, root))
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                mode = '%o' % stat.S_IMODE(st.st_mode)
                if stat.S_ISDIR(st.st_mode):
                    record(b'd', path, '%s 0 -' % mode, b'')
                    stack.append(path)
                elif stat.S_ISLNK(st.st_mode):
                    target = os.fsencode(os.readlink(path))
                    record(b'l', path, '%s %d %s' % (mode, len(target), hashlib.sha256(target).hexdigest()), target)
                elif stat.S_ISREG(st.st_mode):
                    h = hashlib.sha256()
                    keep = st.st_size <= max_file and total + st.st_size <= max_total
                    chunks, size = [], 0
                    try:
                        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                    except OSError:
                        record(b'o', path, '%s 0 -' % mode, b'')
                        continue
                    try:
                        while True:
                            c = os.read(fd, 1 << 20)
                            if not c:
                                break
                            h.update(c)
                            size += len(c)
                            if keep and size <= max_file:
                                chunks.append(c)
                    finally:
                        os.close(fd)
                    keep = keep and size <= max_file and total + size <= max_total
                    payload = b''.join(chunks) if keep else b''
                    total += len(payload)
                    record(b'f' if keep else b'h', path, '%s %d %s' % (mode, size, h.hexdigest()), payload)
                else:
                    record(b'o', path, '%s 0 -' % mode, b'')
    return out
