package warehouse

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Unity Catalog volumes: /Volumes/<catalog>/<schema>/<volume>/… is a folder of the engine's
// working directory (<Dir>/volumes/<catalog>/<schema>/<volume>), readable by COPY INTO and path
// reads and, through a workspace's Files API, writable. Volumes are not managed table storage:
// path access there is allowed.

// createVolume creates a volume's folder; it fails when the schema does not exist.
func (e *DuckDB) createVolume(cat, sch, name string, ifNotExists bool) error {
	cat, sch, name = strings.ToLower(cat), strings.ToLower(sch), strings.ToLower(name)
	if _, err := e.schemaOf(cat, sch); err != nil {
		return err
	}
	key := cat + "." + sch + "." + name
	if _, ok := e.volumes[key]; ok {
		if ifNotExists {
			return nil
		}
		return &SQLError{Class: "VOLUME_ALREADY_EXISTS", SQLState: "42000",
			Message: fmt.Sprintf("Cannot create volume %s because it already exists.", quoteName(cat, sch, name))}
	}
	dir := filepath.Join(e.opts.Dir, "volumes", cat, sch, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return errInternal(err)
	}
	e.volumes[key] = dir
	return nil
}

// CreateVolume creates the volume catalog.schema.volume (if it does not exist) and returns its
// local folder.
func (e *DuckDB) CreateVolume(fullName string) (string, error) {
	parts := strings.Split(fullName, ".")
	if len(parts) != 3 {
		return "", fmt.Errorf("fakewarehouse: volume name %q is not catalog.schema.volume", fullName)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.createVolume(parts[0], parts[1], parts[2], true); err != nil {
		return "", err
	}
	return e.volumes[strings.ToLower(fullName)], nil
}

// VolumeFile maps a volume path (/Volumes/<catalog>/<schema>/<volume>[/…]) to its local path.
// It fails when the path is not under an existing volume.
func (e *DuckDB) VolumeFile(p string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	u, err := e.canonical(p)
	if err != nil {
		return "", err
	}
	local, _ := localPath(u)
	return local, nil
}

// Volumes returns the volumes' full names.
func (e *DuckDB) Volumes() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return sortedKeys(e.volumes)
}

func (e *DuckDB) createVolumeStmt(sess *Session, p *parser) (*Result, error) {
	ifNot := p.acceptKw("IF", "NOT", "EXISTS")
	parts, err := p.qualifiedName()
	if err != nil {
		return nil, err
	}
	cat, sch, name := resolve(sess, parts)
	if _, err := skipObjectOptions(p); err != nil {
		return nil, err
	}
	if err := e.createVolume(cat, sch, name, ifNot); err != nil {
		return nil, err
	}
	return emptyDDLResult(), nil
}

func (e *DuckDB) dropVolumeStmt(sess *Session, p *parser) (*Result, error) {
	ifExists := p.acceptKw("IF", "EXISTS")
	parts, err := p.qualifiedName()
	if err != nil {
		return nil, err
	}
	cat, sch, name := resolve(sess, parts)
	key := cat + "." + sch + "." + name
	dir, ok := e.volumes[key]
	if !ok {
		if ifExists {
			return emptyDDLResult(), nil
		}
		return nil, &SQLError{Class: "UC_VOLUME_NOT_FOUND", SQLState: "42704",
			Message: fmt.Sprintf("Volume %s does not exist.", quoteName(cat, sch, name))}
	}
	delete(e.volumes, key)
	_ = os.RemoveAll(dir)
	return emptyDDLResult(), nil
}
